"""A chain of incremental `offsets run --source kafka` runs equals a full re-read.

Golden scenarios' records are produced batch by batch into one topic of a real Kafka broker;
later batches replay other scenarios onto the partitions of earlier ones (same group ids), so
the increments bring new commits for existing keys, offset tombstones, group deletions and
re-creations, classic and consumer groups. After each batch an incremental run reads only the
new records; a final `--full` run re-reads everything. Every contract table of the last
incremental run must equal the full run's (same as_of). Plus unit checks of the pure state
compaction (transactions).
"""

from __future__ import annotations

import time
import uuid

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offsets_lib.cli import main

# private piece_files._stored_batch: a stored kept file read as the audit tasks read it
from offsets_lib.engine import exchange, piece_files
from offsets_lib.io import incremental, sink
from tests.kafka.test_kafka_job import (
    create_topic,
    produce_rows,
    run_cli,
    scenario_specs,
    table_rows,
)
from tests.reference import scenario, spark_audit
from tests.support.ports import free_port

PARTITIONS = 6
AS_OF = "1700000000000"
# (scenario number, topic partition) per batch; later batches reuse partitions of earlier ones.
BATCHES = [
    [(1, 0), (5, 1), (7, 2), (10, 3), (17, 4), (24, 5)],
    [(6, 0), (18, 4), (25, 5), (3, 1)],
    [(19, 1), (26, 5), (27, 2), (4, 0)],
    [(17, 4), (2, 3), (28, 0), (12, 2)],
]


def _batch_rows(batch: list[tuple[int, int]]) -> list[dict]:
    rows = []
    for (spec,), (_n, partition) in zip(
        (scenario_specs([n]) for n, _p in batch), batch, strict=True
    ):
        for row in scenario.scenario_rows(spec):
            row["partition"] = (partition + row["partition"]) % PARTITIONS
            rows.append(row)
    return rows


@pytest.mark.kafka
@pytest.mark.spark
def test_incremental_chain_equals_full_reread(spark, kafka_bootstrap, tmp_path):
    """Kafka runs, their kept records stored by audit task, against a --full re-read (the
    last incremental run with Delta's Spark writer and --database)."""
    topic = f"incremental-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, PARTITIONS)
    out = str(tmp_path / "tables")
    database = f"incremental_{uuid.uuid4().hex[:8]}"
    common = ["--source", "kafka", "--bootstrap-servers", kafka_bootstrap, "--topic", topic]
    common += ["--output", out, "--as-of", AS_OF]
    produced = []
    for i, batch in enumerate(BATCHES):
        rows = _batch_rows(batch)
        produced.append(len(produce_rows(kafka_bootstrap, topic, rows)))
        # the last incremental run commits with Delta's Spark writer into a catalog: the Kafka
        # path whole on the other writer, its tables compared with the --full re-read's below,
        # and the tables delta-rs commits with either writer (the kept records, the
        # checkpoint) registered beside the Spark writer's
        writer = (
            ["--delta-writer", "spark", "--database", database] if i == len(BATCHES) - 1 else []
        )
        run_cli(*common, "--run-id", f"inc{i}", *writer)
        checkpoint = incremental.read_checkpoint(out, topic)
        assert checkpoint is not None and checkpoint.sequence == i + 1
        assert checkpoint.kept_id == f"inc{i}@{i + 1}"
    listed = {t.name: t.tableType for t in spark.catalog.listTables(database)}
    internal = (incremental.KEPT_TABLE, incremental.CHECKPOINT_TABLE)
    assert {name: listed.get(name) for name in ("offsets", "runs", *internal)} == {
        "offsets": "EXTERNAL",
        "runs": "EXTERNAL",
        **dict.fromkeys(internal, "EXTERNAL"),
    }
    # a view per audit table; none of the next run's state
    assert {name: listed.get(f"latest_{name}") for name in ("offsets", "runs", *internal)} == {
        "offsets": "VIEW",
        "runs": "VIEW",
        **dict.fromkeys(internal, None),
    }
    run_cli(*common, "--run-id", "full", "--full")

    runs = {r["run_id"]: r for r in sink.read_table(out, "runs").to_pylist()}
    assert all(runs[f"inc{i}"]["status"] == "succeeded" for i in range(len(BATCHES)))
    # each incremental run read only its batch; the full run read everything
    assert [runs[f"inc{i}"]["records_read"] for i in range(len(BATCHES))] == produced
    assert runs["full"]["records_read"] == sum(produced)
    last = table_rows(out, f"inc{len(BATCHES) - 1}")
    full = table_rows(out, "full")
    assert all(full[name] for name in ("offsets", "groups", "offset_decisions"))
    for name in full:
        assert last[name] == full[name], name
    # the state is smaller than the log it stands for, and only the newest partition is live
    state = DeltaTable(sink.table_uri(out, incremental.KEPT_TABLE)).to_pyarrow_table()
    assert set(state.column("run_id").to_pylist()) == {"full@5"}
    assert 0 < state.num_rows < sum(produced)

    # After --full, incremental runs continue from the full run's checkpoint.
    more = len(produce_rows(kafka_bootstrap, topic, _batch_rows(BATCHES[1])))
    run_cli(*common, "--run-id", "after")
    after = {r["run_id"]: r for r in sink.read_table(out, "runs").to_pylist()}["after"]
    assert after["records_read"] == more
    checkpoint = incremental.read_checkpoint(out, topic)
    assert checkpoint.kept_id == "after@6"
    # every kept file names its audit task: the next run hands it to that task whole
    cuts = exchange.stored_cuts(incremental.kept_files(out, checkpoint).files)
    assert cuts and None not in cuts

    # A broker that is down: exit 3 quickly, and the checkpoint does not move.
    versions = {
        name: DeltaTable(sink.table_uri(out, name)).version()
        for name in (incremental.CHECKPOINT_TABLE, incremental.KEPT_TABLE, "runs", "offsets")
    }
    started = time.monotonic()
    down = CliRunner().invoke(
        main,
        ["run", *common[:3], f"127.0.0.1:{free_port()}", *common[4:], "--run-id", "down"],
    )
    assert down.exit_code == 3, down.output
    assert time.monotonic() - started < 60
    assert {n: DeltaTable(sink.table_uri(out, n)).version() for n in versions} == versions


# ---- the pure compaction, with batch metadata (transactions) -----------------------------------


def _transactional_rows() -> list[dict]:
    """Scenarios with producer ids and markers (pending, committed, aborted transactions),
    group deletions and consumer groups, each on partitions of its own."""
    rows = []
    for i, spec in enumerate(scenario_specs([20, 21, 22, 23, 18, 24, 5])):
        for row in scenario.scenario_rows(spec):
            row["partition"] += 3 * i
            row.setdefault("producer_id", -1)
            row.setdefault("producer_epoch", -1)
            row.setdefault("is_transactional", False)
            row.setdefault("is_control", False)
            rows.append(row)
    return rows


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.spark
def test_compacted_state_plus_rest_audits_like_the_whole_log(spark, tmp_path):
    """Scenarios with producer ids and markers (pending, committed, aborted transactions) plus
    group deletions and consumer groups, each on its own partition: a chain of compacted states
    followed by the remaining records audits like the whole log. Each audit maps its kept
    records again from their files (as a run does when they were cut for another number of
    tasks) and its new records as Spark reads them."""
    from offsets_lib.audit.coordinator import Coordinator
    from offsets_lib.audit.rules import Params
    from offsets_lib.audit.schemas import spark_schema
    from offsets_lib.engine.staging import KeptFiles, Staging
    from tests.reference.decode import decode_positioned, decode_records

    raw = spark.createDataFrame(_transactional_rows()).cache()
    positioned_schema = spark_schema(incremental.POSITIONED_ARROW)
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=int(AS_OF))

    def tables(decoded) -> dict[str, list[str]]:
        frames = spark_audit.audit(decoded, coordinator=Coordinator.NEW, params=params).frames
        return {
            name: sorted(map(repr, frames[name].collect()))
            for name in ("offsets", "groups", "members", "offset_decisions", "group_decisions")
        }

    whole = tables(decode_records(raw))
    assert whole["offsets"] and whole["groups"]
    # Cuts: 4 = transactions open across the cut (markers come later), 5 = resolved
    # transactions stored with their markers, 7 = a group tombstone in the state. A chain of
    # compactions, as successive incremental runs make them, then one audit.
    state, low, state_files = None, 0, []
    for cut in (4, 5, 7):
        part = raw.filter((raw["offset"] >= low) & (raw["offset"] < cut))
        staging = Staging(str(tmp_path / f"staging-{cut}"))
        pieces = exchange.map_records(part, staging_uri=staging.uri, tasks=3)
        if state_files:  # the kept records, history, mapped again from their files
            units = exchange.plan(
                state_files, map_tasks=2, positioned=tuple(state_files), history=tuple(state_files)
            )
            pieces += exchange.map_pieces(spark, units, staging_uri=staging.uri, tasks=3)
        # the audit tasks write the kept records as a run does (a marker kept by several
        # tasks is stored by each; the next audit reads it once)
        emit = KeptFiles(staging, str(tmp_path), f"k{cut}", 3)
        exchange.audit_pieces(
            spark, pieces, coordinator=Coordinator.NEW, params=params, tasks=3, emit=emit, keep=True
        ).collect()
        kept_dir = tmp_path / incremental.KEPT_TABLE / f"run_id=k{cut}"
        kept, state_files = str(kept_dir), sorted(str(path) for path in kept_dir.glob("*.parquet"))
        state = decode_positioned(spark.read.schema(positioned_schema).parquet(kept), keep_raw=True)
        state, low = state.localCheckpoint(), cut  # as stored: no lineage back to the records
        assert state.count() < raw.filter(raw["offset"] < cut).count()
    rest = decode_records(raw.filter(raw["offset"] >= low))
    once = state.dropDuplicates(["log_partition", "log_offset"])  # the reference audit's input
    assert tables(once.unionByName(rest.select(*state.columns))) == whole


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.spark
def test_kept_records_stored_by_audit_task_audit_like_the_whole_log(spark, tmp_path):
    """The file shuffle's incremental path: each audit task stores its kept records in a file
    that names the task (exchange.kept_task_metadata), and the next audit hands the file whole
    to that task (exchange.stored_pieces) while only the new records are mapped (here as a
    Kafka run maps them, from Spark: exchange.map_records). Over transactional scenarios (a
    marker is kept by each task whose records it resolved, in that task's file), a chain of such
    audits and then the rest of the log gives the reference audit's tables of the whole log,
    also when a later audit has fewer tasks (a divisor: file t of 6 goes to task t % 3)."""
    from offsets_lib.audit.coordinator import Coordinator
    from offsets_lib.audit.rules import Params
    from offsets_lib.engine import pipeline
    from offsets_lib.engine.staging import KeptFiles, Staging
    from tests.reference.decode import decode_records
    from tests.reference.frames import conform
    from tests.staged_audit import table_files, task_tables

    raw = spark.createDataFrame(_transactional_rows()).cache()
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=int(AS_OF))
    names = ("offsets", "groups", "members", "offset_decisions", "group_decisions")

    def conformed(frames) -> dict[str, list[str]]:
        return {
            name: sorted(map(repr, conform(frames[name], name, run_id="r", as_of_ms=0).collect()))
            for name in names
        }

    cuts: list = []
    has_stored_marker = False
    low = 0
    for i, (cut, tasks) in enumerate(((4, 6), (5, 6), (7, 3), (None, 3))):
        part = raw.filter(raw["offset"] >= low)
        if cut is not None:
            part = part.filter(raw["offset"] < cut)
        staging = Staging(str(tmp_path / f"staging-{i}"))
        stored = exchange.stored_pieces(cuts, tasks)
        new = exchange.map_records(part, staging_uri=staging.uri, tasks=tasks)
        written = table_files(staging, params.as_of_ms)
        emit = written if cut is None else KeptFiles(staging, str(tmp_path), f"k{i}", tasks)
        manifest = exchange.audit_pieces(
            spark,
            stored + new,
            coordinator=Coordinator.NEW,
            params=params,
            tasks=tasks,
            emit=emit,
            keep=cut is not None,
        ).collect()
        if cut is None:
            break
        kept = sorted((tmp_path / incremental.KEPT_TABLE / f"run_id=k{i}").glob("*.parquet"))
        cuts = exchange.stored_cuts([str(path) for path in kept])
        assert cuts and None not in cuts and {c.tasks for c in cuts} == {tasks}
        assert len({c.task for c in cuts}) == len(cuts)  # one file per task
        has_stored_marker |= any(
            piece_files._stored_batch(c.path).column("is_control").to_pylist().count(True)
            for c in cuts
        )
        low = cut
    assert has_stored_marker  # the chain carried transaction markers in the stored files
    stats = pipeline.run_stats(manifest)
    assert stats.records_read == raw.filter(raw["offset"] >= low).count()
    audited = task_tables(spark, staging, manifest, params.as_of_ms)
    whole = spark_audit.audit(decode_records(raw), coordinator=Coordinator.NEW, params=params)
    assert conformed(audited) == conformed(whole.frames)
