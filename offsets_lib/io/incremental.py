"""Incremental `--source kafka` runs: the kept records and a per-partition checkpoint.

A run reads only the offsets at or after the checkpoint, unions them with the kept records (a
subset of earlier decoded records) and audits the union. They are chosen so that auditing
``kept ∪ new records`` gives exactly the tables a full re-read of the log gives, for ANY
records that may follow (full and incremental runs agree; tests/kafka/test_incremental.py).

What the audit needs from history (chosen in each audit task by ``audit.kept_records.kept_records``
with the audit's own transaction and compaction functions; ``engine.pipeline.kept_records``):

* offset commits, per (log_partition, group, topic, partition):
  - the newest *counting* record (plain, committed transactional, or a tombstone: LOG-1, LOG-2,
    TXN-2), which later records can only override;
  - the newest value record of any transaction status (``last_value_offset``, the position of
    the group's offset-summary event for G-S1);
  - the committed value under each coordinator's transaction rule (under the Scala loader a
    transactional value committed after a newer tombstone re-creates the offset, semantics.md
    1.3, so it can be older than the newest counting record);
  - the newest tombstone (``has_pending_transaction`` compares pending records with it, TXN-4);
  - every still-pending transactional record, with its producer id (its marker may come in a
    later increment);
  - for every kept record of a resolved transaction, the COMMIT/ABORT marker that resolved it,
    so its status is the same when the kept records are audited again (``transaction_status``
    takes the first marker of the producer after the record; no kept marker lies between).
* group-level records (type >= 2): for a group that has only classic (type 2) records, the
  newest type-2 record and the newest type-2 tombstone (the replay's classic state depends on
  the last type-2 record, ``removed_at`` on the last tombstone). Groups with any modern-family
  record keep all their group-level records: ``replay.replay_group`` is history-dependent there
  (``state_notes`` accumulate, partition-metadata topic names accumulate, a group tombstone
  resets members that have no tombstone of their own), so newest-per-key is replay-equivalent
  only for logs the coordinator wrote by the book (semantics.md LOG-4), not for every log.

Tombstones are kept for as long as their key is kept (no delete.retention.ms expiry):
dropping a tombstone changes results (a Dead group row disappears; a classic group tombstone
that made offsets unreachable, G-S3, would let them re-create a simple group; a simple group
whose offsets were all deleted would vanish), so expiring them in the kept records only would make
incremental and full runs disagree, and expiring them in both would make the Kafka path
disagree with the Parquet path on the same records. The broker's cleaner does expire them, but
when it first processed a tombstone is not visible in the log.

Rejected records are not kept: the ``rejects`` table of an incremental run lists the rejects of
the records read by that run.

Stored under the output root as Delta tables (names start with ``_``, not contract tables):

* ``_kept`` (``KEPT_TABLE``): the kept records as positioned raw records (POSITIONED_ARROW: log
  position, timestamp, key and value bytes, batch metadata; the next run audits them again with
  the new records), partitioned by ``run_id`` = the kept id ``<run_id>@<sequence>``. The audit
  tasks write them while they audit (engine.staging.KeptFiles), one file per task, whose
  footer names the task (the next run hands the file whole to its task: exchange.stored_cuts;
  files without it are mapped like new records);
* ``_checkpoint``: (topic, partition, next_offset, sequence, state_id = the kept id, committed_at,
  run_id).

Commit order (``store``, called after every audit table has committed): the new ``_kept``
partition, then the ``_checkpoint`` rows (one commit), then older kept partitions are
dropped. A crash before the checkpoint commit leaves the old checkpoint and its kept partition
intact: the next run simply redoes the increment.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from deltalake.transaction import AddAction
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsets_lib.audit.schemas import DECODED
from offsets_lib.audit.tables import RUN_ID, TableSpec
from offsets_lib.io import sink, storage
from offsets_lib.io.delta_checksum import write_version_checksum
from offsets_lib.wire.decoded import POSITIONED_ARROW

log = logging.getLogger(__name__)

KEPT_TABLE, CHECKPOINT_TABLE = "_kept", "_checkpoint"

# the positioned columns, with DECODED's column comments
_POSITIONED = StructType([DECODED[name] for name in POSITIONED_ARROW.names])


def _col(name, dtype, comment: str, *, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable, metadata={"comment": comment})


KEPT_SPEC = TableSpec(
    name=KEPT_TABLE,
    comment="Internal: raw records an incremental run needs from history (incremental.py).",
    schema=StructType(
        [
            *_POSITIONED.fields,
            _col(
                RUN_ID,
                StringType(),
                "State id <run_id>@<sequence>; partition column.",
                nullable=False,
            ),
        ]
    ),
)

CHECKPOINT_SPEC = TableSpec(
    name=CHECKPOINT_TABLE,
    comment="Internal: one row per topic partition read by an incremental run (incremental.py).",
    schema=StructType(
        [
            _col("topic", StringType(), "Topic read (normally __consumer_offsets)."),
            _col("partition", IntegerType(), "Partition of that topic."),
            _col("next_offset", LongType(), "First offset the next incremental run reads."),
            _col("sequence", LongType(), "Checkpoint number; the highest one is current."),
            _col("state_id", StringType(), "The _kept partition that goes with this checkpoint."),
            _col("committed_at", TimestampType(), "UTC instant the checkpoint was written."),
            _col(RUN_ID, StringType(), "Run that wrote the checkpoint; partition.", nullable=False),
        ]
    ),
)


@dataclass(frozen=True)
class Checkpoint:
    """The current checkpoint of one topic: where to read next and which kept records go with it."""

    topic: str
    next_offsets: dict[int, int]
    sequence: int
    kept_id: str


@dataclass(frozen=True)
class Increment:
    """What an incremental run read: its range and the kept records it builds on."""

    topic: str
    end_offsets: dict[int, int]
    previous: Checkpoint | None = None  # None: a full read (first run or --full)
    kept_files: tuple[str, ...] = ()  # the files of the kept records (positioned columns)
    kept_rows: int = 0
    sequence: int = 0  # of the newest stored checkpoint (also after --full), 0 = none
    # {offsets partition: records} after its end that open transactions hold back
    # (`kafka.resolve_held_back`): the next run reads them
    held_back: dict[int, int] = field(default_factory=dict)

    @property
    def start_offsets(self) -> dict[int, int] | None:
        """Where to start reading per partition (None: from the log start)."""
        return dict(self.previous.next_offsets) if self.previous is not None else None

    @property
    def new_records(self) -> int:
        """Records the run reads: its offset ranges."""
        return records_between(self.start_offsets, self.end_offsets)


def records_between(start_offsets: Mapping[int, int] | None, end_offsets: Mapping[int, int]) -> int:
    """Records in [start, end) per partition (a partition without a start: from offset 0)."""
    start = start_offsets or {}
    return sum(max(end - start.get(p, 0), 0) for p, end in end_offsets.items())


def current_rows(rows: list[dict]) -> list[dict]:
    """The ``_checkpoint`` rows of every topic's current checkpoint (its highest sequence):
    one output can hold checkpoints of several topics."""
    newest: dict[str, int] = {}
    for r in rows:
        newest[r["topic"]] = max(newest.get(r["topic"], r["sequence"]), r["sequence"])
    return [r for r in rows if r["sequence"] == newest[r["topic"]]]


def _stored_checkpoints(output: str) -> list[dict]:
    uri = sink.table_uri(output, CHECKPOINT_TABLE)
    if not storage.is_delta_table(uri):
        return []
    return storage.delta_table(uri).to_pyarrow_table().to_pylist()


def read_checkpoint(output: str, topic: str) -> Checkpoint | None:
    """The newest checkpoint of ``topic`` under ``output``, or None (never run, or no table)."""
    current = [r for r in current_rows(_stored_checkpoints(output)) if r["topic"] == topic]
    if not current:
        return None
    newest = current[0]["sequence"]
    return Checkpoint(
        topic=topic,
        next_offsets={int(r["partition"]): int(r["next_offset"]) for r in current},
        sequence=int(newest),
        kept_id=current[0]["state_id"],
    )


@dataclass(frozen=True)
class StoredKept:
    """Where the kept records of a checkpoint are: their files and rows (Delta's stats)."""

    files: tuple[str, ...] = ()
    rows: int = 0


def kept_files(output: str, checkpoint: Checkpoint) -> StoredKept:
    """The stored records of ``checkpoint`` in KEPT_TABLE."""
    uri = sink.table_uri(output, KEPT_TABLE)
    if not storage.is_delta_table(uri):
        return StoredKept()
    dt = storage.delta_table(uri)
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    rows = [
        int(n or 0)
        for n, kept_id in zip(
            actions.get("num_records", []),
            actions.get(f"partition.{RUN_ID}", []),
            strict=True,
        )
        if kept_id == checkpoint.kept_id
    ]
    if not rows:
        return StoredKept()
    files = dt.file_uris(file_pruning_predicate=[(RUN_ID, "=", checkpoint.kept_id)])
    return StoredKept(tuple(files), sum(rows))


def begin(
    output: str,
    topic: str,
    end_offsets: dict[int, int],
    *,
    full: bool,
    held_back: dict[int, int] | None = None,
) -> Increment:
    """The increment to read: from the stored checkpoint (none, or ``full``: from the start)."""
    newest = read_checkpoint(output, topic)
    previous = None if full else newest
    stored = kept_files(output, previous) if previous is not None else StoredKept()
    return Increment(
        topic=topic,
        end_offsets=dict(end_offsets),
        previous=previous,
        kept_files=stored.files,
        kept_rows=stored.rows,
        sequence=newest.sequence if newest is not None else 0,
        held_back=dict(held_back or {}),
    )


def next_kept_id(increment: Increment, run_id: str) -> str:
    """The id (partition of KEPT_TABLE) of the kept records this run stores."""
    # --full continues the numbering: the newest one wins
    return f"{run_id}@{increment.sequence + 1}"


def store(kept: list[AddAction], increment: Increment, *, output: str, run_id: str) -> str:
    """Commit the new kept records, then advance the checkpoint; returns the new kept id.

    `kept` are the files of the records of the run (earlier kept records included) that a later
    audit needs, which the audit tasks chose (`audit.kept_records.kept_records`) and wrote into
    the partition `next_kept_id` (`engine.staging.KeptFiles`) as raw records, which the next
    run audits like new ones. Call only after every table of the run has committed.
    """
    sequence = increment.sequence + 1
    kept_id = next_kept_id(increment, run_id)
    sink.commit_files(KEPT_SPEC, kept, output=output, run_id=kept_id)
    now = datetime.now(UTC)
    rows = [
        {
            "topic": increment.topic,
            "partition": int(p),
            "next_offset": int(o),
            "sequence": sequence,
            "state_id": kept_id,
            "committed_at": now,
            RUN_ID: run_id,
        }
        for p, o in sorted(increment.end_offsets.items())
    ]
    sink.write_rows(rows, CHECKPOINT_SPEC, output=output, run_id=run_id)
    _drop_old_kept(output)
    return kept_id


def _drop_old_kept(output: str) -> None:
    """Best effort: remove the kept partitions no current checkpoint names, of any topic (files
    stay until ``DeltaTable.vacuum``)."""
    try:
        needed = {r["state_id"] for r in current_rows(_stored_checkpoints(output))}
        if not needed:
            return
        uri = sink.table_uri(output, KEPT_TABLE)
        dt = storage.delta_table(uri)
        quoted = ", ".join("'" + kept_id.replace("'", "''") + "'" for kept_id in sorted(needed))
        dt.delete(predicate=f"{RUN_ID} NOT IN ({quoted})")
        write_version_checksum(uri, dt)
    except Exception as exc:  # the checkpoint is committed; an old partition is only space
        log.warning("could not drop old kept partitions: %s", exc)
