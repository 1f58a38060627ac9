"""`make bench`'s production line: the job as the hourly DAG runs it, against Spark's own limit
in the same deployment.

The deployment is tests/cluster's, in miniature: a Spark standalone master and two workers (one
core, 2 GB each), SeaweedFS serving S3, a Hive metastore (embedded Derby) named by the
cluster's own spark-defaults.conf, and a Kafka 4.4 broker over SASL_SSL (SCRAM-SHA-512). The
bench dump's records (`offsets generate --profile bench`, bench/data) are produced to a
50-partition topic, then, in rounds that each start with the next one in turn:

- the job: `jobs/offsets_job.py --conf conf/prod-example.toml` submitted as jobs/airflow_dag.py
  submits it (the shipped profile: Kafka source, the file shuffle, delta-rs writing, tables
  in the catalog), with the deployment's addresses as options, onto a fresh output;
- the baseline (bench/production_baseline.py): the same records read through the connector,
  the latest per key kept, written as one Delta table in the catalog;
- with `--variant ARGS` (repeatable), the job with those options added too (e.g.
  `--variant "--delta-writer spark"`): the figures that chose the profile's writer (the
  figures that chose the file shuffle over Spark's, which is removed, are in docs/design.md).

Both are timed end to end as spark-submit processes (JVM, packages from Ivy's cache, executors,
Kafka read, writes, catalog). The medians go to bench/results.json (`production`), and one line
is printed: `bench production: N records, job S s, baseline B s, ratio R` (R = B / S; the
target is R >= 1.25).

    PYTHONPATH=. .venv/bin/python bench/production.py [--records 1000000] [--reps 3]
        [--variant "--delta-writer spark"] ...
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from bench.harness import MachineCpu, _append_results, ensure_dump
from bench.kafka_topic import BROKER_SETTINGS, create_topic, log_order, produce
from tests.broker.brokers import KafkaBroker
from tests.cluster.servers import (
    KAFKA_VERSION,
    REPO,
    SASL_PASSWORD,
    SASL_USER,
    S3Server,
    SparkCluster,
    run_cluster,
    run_s3,
    write_spark_conf,
)

TOPIC = "offsets-bench"
PARTITIONS = 50
PROFILE = REPO / "conf" / "prod-example.toml"
BASELINE = REPO / "bench" / "production_baseline.py"
WARM_METASTORE = REPO / "bench" / "production_metastore.py"
TARGET_RATIO = 1.25  # the job in at most 80 % of the baseline's time
SUBMIT_TIMEOUT_S = 3600


# Delta's SQL extension and catalog, as the DAG passes them (jobs/airflow_dag.py DELTA_CONF)
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _timed(
    cluster: SparkCluster, what: str, args: list[str], env: dict[str, str], **options
) -> tuple[float, dict[str, float]]:
    """Seconds of one spark-submit, start to exit, and the machine's CPU seconds meanwhile by
    kind of process (harness.MachineCpu); fails with the tail of its log."""
    with MachineCpu() as cpu:
        started = time.perf_counter()
        # Spark's fetch cache, which the DAG leaves on: the tests' copy of every jar per
        # executor is not part of the deployment measured here
        process = cluster.submit(args, env, fetch_cache=True, **options)
        code = process.wait(timeout=SUBMIT_TIMEOUT_S)
        seconds = time.perf_counter() - started
    if code != 0:
        tail = cluster.submitted[-1].read_text()[-4000:]
        raise RuntimeError(f"{what} exited with {code}:\n{tail}")
    used = cpu.by_kind()
    shown = ", ".join(f"{kind} {s:.1f}" for kind, s in used.items() if s >= 0.1)
    print(f"  {what}: {seconds:.1f} s; CPU s {sum(used.values()):.1f}: {shown}", flush=True)
    return seconds, used


def _job_args(broker: KafkaBroker, s3: S3Server, name: str) -> list[str]:
    """The DAG's application arguments: the profile, then this deployment's addresses (a
    fresh output and database per run: `name`)."""
    assert broker.tls is not None
    return [
        "--conf", str(PROFILE),
        "--bootstrap-servers", broker.bootstrap,
        "--kafka-option", f"ssl.ca.location={broker.tls.ca_pem}",
        "--topic", TOPIC,
        "--output", s3.uri(f"bench/job-{name}/tables"),
        "--database", f"bench_job_{name}",
        "--run-id", f"bench-{name}",
        "--max-reject-ratio", "1",
    ]  # fmt: skip


def run(records: int, reps: int, out: Path, variants: list[str]) -> dict[str, Any]:
    """Medians of `reps` rounds (each round starts with the next of the job, the baseline and
    the job with each of `variants`' options added, in turn)."""
    from offsets_lib.tools.jars import submit_packages

    dump = ensure_dump(out / "data", records)
    table = log_order(dump)
    scratch = out / "scratch" / "production"  # kept until the next run: the submits' logs
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    packages = submit_packages()
    timings: dict[str, list[float]] = {}
    cpu: dict[str, list[dict[str, float]]] = {}  # by round: CPU seconds by kind of process
    settings = {**BROKER_SETTINGS, "num.partitions": str(PARTITIONS)}
    broker = KafkaBroker(
        KAFKA_VERSION, scratch / "kafka", settings, scram_users={SASL_USER: SASL_PASSWORD}
    )
    broker.start()
    try:
        create_topic(broker.client_conf, TOPIC, PARTITIONS)
        started = time.perf_counter()
        produced = produce(broker.client_conf, TOPIC, table, PARTITIONS)
        print(f"produced {produced:,} records in {time.perf_counter() - started:.0f} s")
        with run_s3(scratch / "s3") as s3, run_cluster(scratch / "cluster", s3) as cluster:
            conf_dir = write_spark_conf(scratch / "spark-conf", scratch / "catalog", DELTA_CONF)
            env = {
                **s3.env,
                "SPARK_CONF_DIR": str(conf_dir),
                "KAFKA_SASL_PASSWORD": SASL_PASSWORD,
            }
            # the baseline logs in as the job does (the profile's user, the CA)
            baseline_env = env | _baseline_client_env(broker)
            # a deployment's metastore exists before its first hourly run: its schema is
            # created here, untimed, not by whichever timed submit comes first
            _timed(cluster, "metastore", [], env, packages=packages, application=WARM_METASTORE)
            for rep in range(reps):
                works = {
                    "job": (_job_args(broker, s3, f"{rep}"), env, {}),
                    "baseline": (
                        [broker.bootstrap, TOPIC, f"bench_baseline_{rep}",
                         s3.uri(f"bench/rep-{rep}/baseline")],
                        baseline_env,
                        {"application": BASELINE},
                    ),
                }  # fmt: skip
                for variant in variants:
                    args = _job_args(broker, s3, f"{rep}_{re.sub(r'[^a-z0-9]+', '_', variant)}")
                    works[f"job {variant}"] = ([*args, *shlex.split(variant)], env, {})
                names = list(works)
                for what in names[rep % len(names) :] + names[: rep % len(names)]:
                    args, run_env, options = works[what]
                    seconds, used = _timed(
                        cluster, what, args, run_env, packages=packages, **options
                    )
                    timings.setdefault(what, []).append(seconds)
                    cpu.setdefault(what, []).append(used)
    finally:
        broker.stop()
    medians = {what: round(statistics.median(times), 1) for what, times in timings.items()}
    return {
        "records": produced,
        "reps": reps,
        "seconds": timings,
        "cpu_s_by_process": cpu,
        "median_s": medians,
        "job_median_s": medians["job"],
        "baseline_median_s": medians["baseline"],
        "ratio_baseline_over_job": round(medians["baseline"] / medians["job"], 2),
        "load_average_1m": os.getloadavg()[0],
        "configuration": "conf/prod-example.toml on a 2-worker standalone cluster, S3 "
        "(SeaweedFS), Hive metastore, Kafka 4.4 over SASL_SSL",
    }


def _baseline_client_env(broker: KafkaBroker) -> dict[str, str]:
    """The baseline's Kafka login: passed as the job's is, from the environment."""
    assert broker.tls is not None
    return {
        "BENCH_KAFKA_CA": str(Path(broker.tls.ca_pem).resolve()),  # executors: own folders
        "BENCH_KAFKA_USER": SASL_USER,
        "KAFKA_SASL_PASSWORD": SASL_PASSWORD,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also time the job with these options added (repeatable)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    result = run(args.records, args.reps, out, args.variant)
    ratio = result["ratio_baseline_over_job"]
    print(
        f"bench production: {result['records']} records, job {result['job_median_s']:.1f} s,"
        f" baseline {result['baseline_median_s']:.1f} s, ratio {ratio:.2f}"
        f" ({'meets' if ratio >= TARGET_RATIO else 'misses'} the target >= {TARGET_RATIO:g})",
        flush=True,
    )
    for what, seconds in result["median_s"].items():
        if what.startswith("job --"):
            print(f"  {what}: {seconds:.1f} s (median)", flush=True)
    _append_results(out / "results.json", {"production": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
