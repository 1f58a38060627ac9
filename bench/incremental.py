"""An incremental Kafka run of 10k new records on top of a stored state of 10M.

A real Kafka 4.4.0 broker (tests/broker's harness, jars from `make broker-jars`) on 127.0.0.1
gets a 50-partition topic holding the bench's 10M-record dump (`offsets generate --profile
bench`, bench/data), all but the last 200 records of each partition. `offsets run --source
kafka` reads it all (the state run: its kept records and checkpoint are stored), then the
remaining 10k records are produced and a second `offsets run` (the incremental run, timed end to
end as a user runs it: CLI start, JVM, Kafka read, audit, tables, checkpoint) continues from the
checkpoint. Results go to bench/results.json next to `make bench`'s.

    PYTHONPATH=. .venv/bin/python bench/incremental.py [--records 10000000] [--tail 200]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.harness import _append_results, ensure_dump, measure
from bench.kafka_topic import BROKER_SETTINGS, create_topic, log_order, produce
from tests.broker.brokers import KafkaBroker

TOPIC = "offsets-bench"
KAFKA_VERSION = "4.4.0"
TARGET_S = 15.0  # the incremental run, end to end


def _split(dump: str, tail: int) -> tuple[Any, Any]:
    """The dump in log order, split into (state, increment): the increment is each
    partition's last `tail` records."""
    table = log_order(dump)
    partition = table.column("partition").to_numpy()
    starts = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1]])
    ends = np.r_[starts[1:], len(partition)]
    # each record's distance from its partition's last record
    from_end = np.repeat(ends, ends - starts) - 1 - np.arange(len(partition))
    is_tail = pa.array(from_end < tail)
    return table.filter(pc.invert(is_tail)), table.filter(is_tail)


def _offsets_run(bootstrap: str, output: Path, run_id: str) -> None:
    """`offsets run --source kafka` as a user starts it (a new process: CLI, JVM, session)."""
    command = [
        str(Path(sys.executable).with_name("offsets")),
        "run",
        "--source",
        "kafka",
        "--bootstrap-servers",
        bootstrap,
        "--topic",
        TOPIC,
        "--output",
        str(output),
        "--run-id",
        run_id,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    stages = [line for line in done.stderr.splitlines() if line.startswith("[")]
    print("\n".join([*stages, done.stdout.strip()]), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--tail", type=int, default=200, help="new records per partition")
    parser.add_argument("--out", default="bench")
    args = parser.parse_args(argv)
    root = Path(args.out)
    dump = ensure_dump(root / "data", args.records)
    scratch = root / "scratch" / "incremental"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)

    state, increment = _split(dump, args.tail)
    partitions = 50
    broker = KafkaBroker(KAFKA_VERSION, scratch / "kafka", BROKER_SETTINGS)
    broker.start()
    try:
        create_topic(broker.client_conf, TOPIC, partitions)
        started = time.perf_counter()
        produced = produce(broker.client_conf, TOPIC, state, partitions)
        print(f"produced {produced:,} records in {time.perf_counter() - started:.0f} s", flush=True)
        output = scratch / "tables"
        state_run = measure(lambda: _offsets_run(broker.bootstrap, output, "state"))
        print(f"state run ({produced:,} records): {state_run['wall_s']:.1f} s", flush=True)
        new = produce(broker.client_conf, TOPIC, increment, partitions)
        incremental = measure(lambda: _offsets_run(broker.bootstrap, output, "hourly"))
        print(
            f"incremental run ({new:,} new records over a state of {produced:,}):"
            f" {incremental['wall_s']:.1f} s end to end (target under {TARGET_S:g} s)"
            + (" [machine busy]" if incremental["is_machine_busy"] else ""),
            flush=True,
        )
    finally:
        broker.stop()
    _append_results(
        root / "results.json",
        {
            "incremental": {
                "state_records": produced,
                "new_records": new,
                "state_run": state_run,
                "incremental_run": incremental,
                "target_s": TARGET_S,
                "meets_target": incremental["wall_s"] < TARGET_S,
            }
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
