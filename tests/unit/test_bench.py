"""The bench's bookkeeping: CPU per process, never negative, and busy reps flagged."""

from __future__ import annotations

import subprocess
import sys
import uuid

from bench import harness

# 0.6 s of CPU, then a rest before it exits, in which a sampler sees its whole CPU even on a
# loaded machine (a clean-clone suite's sampler once missed the child altogether)
BURN = (
    "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"
    "time.sleep(1.5)"
)


def test_cpu_of_workers_that_exit_mid_run_is_counted_and_never_negative() -> None:
    def work() -> None:
        for _ in range(2):  # each child exits before the measurement ends
            subprocess.run([sys.executable, "-c", BURN], check=True)

    measured = harness.measure(work)
    assert measured["cpu_s"] >= 1.0  # both children's CPU, sampled while they ran
    assert measured["other_processes_cpu_s"] >= 0.0
    assert isinstance(measured["is_machine_busy"], bool)
    assert measured["python_worker_rss_mb"] > 0.0


def test_processes_alive_before_the_work_count_only_what_they_use_during_it() -> None:
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        burner.wait()  # its CPU is spent before the measurement starts
        measured = harness.measure(lambda: None)
    finally:
        burner.wait()
    assert 0.0 <= measured["cpu_s"] < 0.5
    assert 0.0 <= measured["system_cpu_s"] <= measured["cpu_s"]


# a child that spends kernel time: 256 MB of fresh pages, touched and given back, ten times
FAULTS = (
    "import mmap\n"
    "for _ in range(10):\n"
    "    m = mmap.mmap(-1, 256 << 20)\n"
    "    for i in range(0, 256 << 20, 4096): m[i] = 1\n"
    "    m.close()"
)


def test_the_kernels_share_of_the_cpu_is_measured_apart() -> None:
    def work() -> None:
        subprocess.run([sys.executable, "-c", FAULTS], check=True)

    measured = harness.measure(work)
    assert 0.1 <= measured["system_cpu_s"] <= measured["cpu_s"]


def _result(records: int, pipeline_s: float, baseline_s: float, **extra: float) -> dict:
    return {
        "records": records,
        "pipeline_s": pipeline_s,
        "baseline_s": baseline_s,
        "ratio_baseline_over_pipeline": baseline_s / pipeline_s,
        "driver_peak_rss_mb": 500.0,
        "python_worker_peak_rss_mb": 1500.0,
        "largest_over_mean_task": 1.1,
        "dominant_group_share": 0.0,
        **extra,
    }


def test_targets_are_judged_on_their_figures() -> None:
    earlier = [_result(10_000_000, 100.0, 110.0)]
    results = [
        _result(1_000_000, 8.0, 4.0),
        _result(10_000_000, 80.0, 120.0, pipeline_over_floor=2.6),
        _result(100_000_000, 1000.0, 1200.0, python_worker_peak_rss_mb=3500.0),
        _result(10_000_000, 90.0, 100.0, dominant_group_share=0.3, largest_over_mean_task=1.9),
    ]
    assert harness.target_lines(results, earlier) == [
        "target 1M records: 2.000x the baseline's time -> met",
        "target 10M records: 1.500x the baseline's throughput -> met",
        "target 10M records: 2.600x the Arrow floor's time -> MISSED",
        "target 100M records: 12.5x the 10M time, driver 500 MB, worker 3500 MB -> MISSED",
        "target 10,000,000 records, one group 30% of the commits: largest task 1.90x the"
        " average, driver 500 MB, worker 1500 MB -> met",
        "target 10,000,000 skewed against unskewed: 1.125x the time -> met",
    ]


def test_a_variant_is_named_in_its_target_and_not_compared_with_the_defaults() -> None:
    results = [
        _result(1_000_000, 8.0, 2.0, delta_writer="spark"),
        _result(1_000_000, 8.0, 4.0, delta_writer="delta-rs"),
        _result(100_000_000, 1000.0, 1000.0),
    ]
    # an earlier sitting's 10M run on Spark's shuffle (removed) is no reference for 100M
    earlier = [_result(10_000_000, 100.0, 100.0, shuffle="spark")]
    assert harness.target_lines(results, earlier) == [
        "target 1M records (--delta-writer spark): 4.000x the baseline's time -> MISSED",
        "target 1M records: 2.000x the baseline's time -> met",
        "target 100M records: driver 500 MB, worker 1500 MB -> met",
    ]


def test_the_production_lines_processes_are_named_by_their_command_lines() -> None:
    java = "/usr/lib/jvm/java-17/bin/java"
    commands = {
        "driver JVM": [java, "-cp", "jars/*", "org.apache.spark.deploy.SparkSubmit", "job.py"],
        "executor JVMs": [java, "org.apache.spark.executor.CoarseGrainedExecutorBackend"],
        "executors' Python": ["./environment/bin/python", "-m", "pyspark.daemon"],
        "driver Python": ["/venv/bin/python", "/repo/jobs/offsets_job.py", "--conf", "p.toml"],
        "unpacking": ["/usr/bin/gzip", "-dc", "/tmp/spark-1/executor-env.tar.gz"],
        "Kafka broker": [java, "-Xmx1G", "kafka.Kafka", "server.properties"],
        "Spark master, workers": [java, "org.apache.spark.deploy.worker.Worker", "spark://m"],
        "S3 (SeaweedFS)": ["/venv/bin/weed", "mini", "-dir", "/tmp/s3"],
        "other": ["/bin/bash", "-c", "gzip -dc x.tar.gz | tar -xf -"],
    }
    assert {kind: harness.process_kind(c) for kind, c in commands.items()} == {
        kind: kind for kind in commands
    }
    assert harness.process_kind([]) == "other"


def test_machine_cpu_counts_each_kind_from_its_processes_while_inside(monkeypatch) -> None:
    # a kind of this test's own: other tests may run a driver Python at the same time
    marker = f"burn-{uuid.uuid4().hex}"
    monkeypatch.setattr(harness, "PROCESS_KINDS", (("burner", marker), *harness.PROCESS_KINDS))
    with harness.MachineCpu(interval_s=0.1) as cpu:  # the child exits before the end
        subprocess.run([sys.executable, "-c", BURN, marker], check=True)
    used = cpu.by_kind()
    assert 0.4 <= used["burner"] <= 0.8  # the child's 0.6 s, sampled while it ran
    assert all(seconds >= 0.0 for seconds in used.values())
    assert list(used.values()) == sorted(used.values(), reverse=True)
