"""Transactional offset commits (semantics.md TXN rows): which outcome each one had.

An offset commit written by a producer inside a transaction (TXN-1) counts only once its
transaction commits (TXN-2); an aborted one never counts (TXN-3); one with no marker yet is
pending (TXN-5) and blocks expiry of its key. Whether a plain tombstone wipes transactional
offsets (TXN-4) depends on the coordinator: `takes_effect_at` is that rule, in one place.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from offsets_lib.audit.coordinator import Coordinator

# Outcome of an offset commit's transaction, as the `txn_status` column spells it.
NOT_TRANSACTIONAL, COMMITTED, ABORTED, PENDING = "none", "committed", "aborted", "pending"
_STATUS_NAMES = pa.array([NOT_TRANSACTIONAL, COMMITTED, ABORTED, PENDING], pa.string())

# Kafka's default transaction.max.timeout.ms: the transaction coordinator aborts a transaction
# open longer, so a COMMIT marker follows its offsets by about this much at most.
TRANSACTION_MAX_TIMEOUT_MS = 900_000


def transaction_status(
    log_partition: np.ndarray,
    producer_id: np.ndarray,
    log_offset: np.ndarray,
    is_transactional: np.ndarray,
    marker: np.ndarray,
) -> tuple[pa.Array, np.ndarray]:
    """TXN-1..TXN-3, TXN-5 for every row: none, committed, aborted or pending (strings), and the
    row of the marker that resolved it (-1 for none).

    `marker` is 1 for a COMMIT marker, 2 for ABORT, 0 otherwise. A transactional record's outcome
    is the first marker of the same producer after it in the same offsets-topic partition.
    """
    n = len(log_offset)
    status = np.zeros(n, dtype=np.int8)  # indexes into _STATUS_NAMES
    resolved_by = np.full(n, -1, dtype=np.int64)
    if is_transactional.any():
        involved = np.flatnonzero(is_transactional | (marker > 0))
        order = involved[
            np.lexsort((log_offset[involved], producer_id[involved], log_partition[involved]))
        ]
        m = len(order)
        is_marker = marker[order] > 0
        at_or_after = np.where(is_marker, np.arange(m), m)
        next_marker = np.minimum.accumulate(at_or_after[::-1])[::-1]
        found = next_marker < m
        nxt = np.minimum(next_marker, m - 1)
        same = (
            found
            & (log_partition[order][nxt] == log_partition[order])
            & (producer_id[order][nxt] == producer_id[order])
        )
        outcome = np.where(same, marker[order][nxt], 0)
        txn_rows = is_transactional[order]
        resolved = np.select([outcome == 1, outcome == 2], [1, 2], 3).astype(np.int8)
        status[order[txn_rows]] = resolved[txn_rows]
        resolved_by[order[txn_rows]] = np.where(same, order[nxt], -1)[txn_rows]
    return _STATUS_NAMES.take(pa.array(status)), resolved_by


NEVER = np.iinfo(np.int64).max  # a position no tombstone reaches


def takes_effect_at(
    log_offset: np.ndarray,
    marker_offset: np.ndarray,
    is_committed: np.ndarray,
    is_pending: np.ndarray,
    *,
    coordinator: Coordinator,
) -> np.ndarray:
    """Per offset-commit row: the log position a plain offset tombstone must come after to remove
        the row's value (a tombstone at t removes it iff t > this position).

        New coordinator (TXN-4): a plain tombstone removes the committed offset and wipes every
        pending transactional offset of the partition, so every record counts from its own position.
        Scala loader (semantics.md 1.3, last paragraph): a tombstone removes only what is committed
        when it is read; a transactional offset is committed only when its marker is read (so it
        counts from the marker's position, and a commit marker after the tombstone re-creates the
        offset), and a still-pending one is never removed by a tombstone. `marker_offset` is the
        position of the marker that resolved the row (any value for rows without one); the masks say
    which rows belong to a committed and which to a still-open transaction.
    """
    if not coordinator.is_scala:
        return log_offset
    return np.select(
        [is_committed, is_pending], [marker_offset, np.full_like(log_offset, NEVER)], log_offset
    )
