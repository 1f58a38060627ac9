"""An audit task's input (RAW_ARROW), decoded once with its offset commits' transactions
resolved (`ResolvedCommits`): what the audit and the kept records both start from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import compaction, replay
from offsets_lib.audit.arrays import as_bools, as_ints, id_codes, take_rows
from offsets_lib.audit.transactions import transaction_status
from offsets_lib.wire.batch_decode import TaskRecords, decode_task_records
from offsets_lib.wire.decoded import OFFSET_COMMIT_TYPES, POSITIONED_ARROW
from offsets_lib.wire.fastpath import is_one_of

# the previous run's kept records (is_history) are audited, not counted
RAW_ARROW = POSITIONED_ARROW.append(pa.field("is_history", pa.bool_()))


@dataclass(frozen=True)
class ResolvedCommits:
    """A task's records decoded once (values left undecoded), their offset commits with the
    transaction status, and the commits `compaction.kept_rows` keeps: what the kept
    records (`kept_records`) choose from."""

    records: TaskRecords
    ok: np.ndarray  # decoded without error
    is_control: np.ndarray
    record_type: np.ndarray  # -1 where unknown
    tombstone: np.ndarray
    rows: np.ndarray  # decoded rows of the offset commits
    commits: pa.Table  # their columns, with txn_status, marker_offset and group_code
    resolved_by: np.ndarray  # per decoded row: the row of the marker that resolved it, or -1
    group_codes: np.ndarray  # per decoded row: the code of its group id (arrays.id_codes)

    @cached_property
    def is_kept(self) -> np.ndarray:
        """Per decoded row: an offset commit that kept_rows keeps."""
        is_kept = np.zeros(self.records.table.num_rows, dtype=bool)
        is_kept[self.rows[compaction.kept_rows(self.commits)]] = True
        return is_kept


def resolved_commits(batches: list[pa.RecordBatch]) -> ResolvedCommits:
    """`ResolvedCommits` of records decoded without their group-level values."""
    return _resolved(decode_task_records(batches, every_value_of=frozenset()))


def audit_decoded(batches: list[pa.RecordBatch]) -> ResolvedCommits:
    """`ResolvedCommits` of records decoded with the values the group replay reads."""
    return _resolved(
        decode_task_records(
            batches,
            every_value_of=replay.EVERY_VALUE_TYPES,
            newest_value_of=replay.LAST_VALUE_TYPES,
            raw_value_of=replay.RAW_VALUE_TYPES,
        )
    )


def _resolved(records: TaskRecords) -> ResolvedCommits:
    decoded = records.table
    ok = ~as_bools(pc.is_valid(decoded.column("error")))
    is_control = as_bools(decoded.column("is_control"))
    record_type = as_ints(decoded.column("record_type"), -1)
    tombstone = as_bools(decoded.column("is_tombstone"))
    group_codes = id_codes(decoded.column("group_id"))
    rows, commits, resolved_by = _commits_with_status(
        decoded, ok, is_control, record_type, tombstone
    )
    commits = commits.append_column("group_code", pa.array(group_codes[rows]))
    return ResolvedCommits(
        records, ok, is_control, record_type, tombstone, rows, commits, resolved_by, group_codes
    )


def _commits_with_status(
    decoded: pa.Table,
    ok: np.ndarray,
    is_control: np.ndarray,
    record_type: np.ndarray,
    tombstone: np.ndarray,
) -> tuple[np.ndarray, pa.Table, np.ndarray]:
    """The offset commits (their rows, and their columns with `txn_status` and `marker_offset`)
    and, for each row of `decoded`, the row of the transaction marker that resolved it (-1 for
    none)."""
    control_type = decoded.column("control_type")
    marker = np.select(
        [as_bools(pc.equal(control_type, "COMMIT")), as_bools(pc.equal(control_type, "ABORT"))],
        [1, 2],
        0,
    )
    marker = np.where(ok & is_control, marker, 0)
    commit = ok & ~is_control & is_one_of(record_type, OFFSET_COMMIT_TYPES)
    producer = as_ints(decoded.column("producer_id"), -1)
    is_txn = commit & as_bools(decoded.column("is_transactional")) & (producer >= 0) & ~tombstone
    log_offset = as_ints(decoded.column("log_offset"), -1)
    status, resolved_by = transaction_status(
        as_ints(decoded.column("log_partition"), -1), producer, log_offset, is_txn, marker
    )
    rows = np.flatnonzero(commit)
    commits = take_rows(decoded.select([*compaction.OFFSET_KEY, *compaction.RECORD_COLUMNS]), rows)
    resolving = resolved_by[rows]
    marker_offset = pa.array(log_offset[np.maximum(resolving, 0)], mask=resolving < 0)
    commits = commits.append_column("txn_status", take_rows(status, rows))
    return rows, commits.append_column("marker_offset", marker_offset), resolved_by
