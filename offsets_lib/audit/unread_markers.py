"""The offsets a COMMIT marker this read cannot see may re-create (TXN-MARKER-UNREAD), per group.

compaction.unread_marker_offsets finds them; here they become each group row's
`unread_marker_offsets` list (UNREAD_MARKER_OFFSET elements), and a group the run decides is
gone but one such offset would bring back is flagged `is_group_in_doubt`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import compaction
from offsets_lib.audit.arrays import as_ints, key_strings
from offsets_lib.audit.transactions import TRANSACTION_MAX_TIMEOUT_MS

# an offset whose tombstone may lose to a COMMIT marker this read cannot see (TXN-MARKER-UNREAD):
# its newest value and the tombstone (compaction.unread_marker_offsets), one per element of
# a group's `unread_marker_offsets`
UNREAD_MARKER_OFFSET = pa.struct(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("commit_timestamp_ms", pa.int64()),
        ("expire_timestamp_ms", pa.int64()),
        ("log_offset", pa.int64()),
        ("log_timestamp_ms", pa.int64()),
        ("rule", pa.string()),
        ("reason", pa.string()),
    ]
)

UNREAD_MARKER_REASON = (
    f"deleted within {TRANSACTION_MAX_TIMEOUT_MS // 60_000} min of this commit, before it"
    " expired; read without transaction markers: if a transaction wrote it and its COMMIT"
    " marker came after the delete, the Scala loader re-creates it"
)


def unread_marker_lists(groups: pa.Table, unread: pa.Table | None) -> pa.Array:
    """Per group row: its offsets `compaction.unread_marker_offsets` found (UNREAD_MARKER_OFFSET
    elements, by topic and partition); every such key's group has a row (group_summary)."""
    list_type = pa.list_(UNREAD_MARKER_OFFSET)
    if unread is None or unread.num_rows == 0:
        empty = np.zeros(groups.num_rows + 1, dtype=np.int32)
        return pa.ListArray.from_arrays(empty, pa.array([], UNREAD_MARKER_OFFSET), type=list_type)
    at = pc.index_in(
        key_strings(unread.column("log_partition"), unread.column("group_id")),
        value_set=key_strings(groups.column("log_partition"), groups.column("group_id")),
    )
    owner = as_ints(at, -1)
    unread = unread.filter(pa.array(owner >= 0)).append_column(
        "_group_row", pa.array(owner[owner >= 0])
    )
    unread = unread.sort_by(
        [("_group_row", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    )
    n = unread.num_rows
    elements = pa.StructArray.from_arrays(
        [
            *[
                unread.column(f.name).combine_chunks().cast(f.type)
                for f in UNREAD_MARKER_OFFSET
                if f.name not in ("rule", "reason")
            ],
            pa.repeat(pa.scalar(compaction.TXN_MARKER_UNREAD), n),
            pa.repeat(pa.scalar(UNREAD_MARKER_REASON), n),
        ],
        fields=list(UNREAD_MARKER_OFFSET),
    )
    counts = np.bincount(as_ints(unread.column("_group_row"), 0), minlength=groups.num_rows)
    offsets = pa.array(np.r_[0, np.cumsum(counts)], pa.int32())
    return pa.ListArray.from_arrays(offsets, elements, type=list_type)


def is_group_in_doubt(groups: pa.Table) -> pa.Array:
    """`unread_marker_offsets.is_group_in_doubt`: the run decides the group does not exist at
    as_of (Dead, or deleted by a cleanup at as_of) and one of its offsets is one a COMMIT
    marker after its tombstone would re-create, which the Scala loader then shows in the group
    (an Empty group of that offset). A group that exists either way is not in doubt."""
    has_unread = pc.greater(pc.list_value_length(groups.column("unread_marker_offsets")), 0)
    gone = pc.or_(
        pc.fill_null(pc.equal(groups.column("state"), "Dead"), False),
        pc.fill_null(groups.column("deleted"), False),
    )
    return pc.fill_null(pc.and_(has_unread, gone), False)
