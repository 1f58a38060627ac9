"""Offsets in doubt, for the reading commands (`offsets fetch`, `offsets lag`): the run's
`unread_marker_offsets` (TXN-MARKER-UNREAD).

A read without transaction markers under a Scala coordinator cannot tell whether a COMMIT
marker came after an offset's tombstone; if one did, the broker's loader re-creates the offset.
The run's tables have it deleted (as the records read); these commands answer the same and say
which offset the broker would show instead, so that no answer looks surer than the run was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

UNREAD_MARKER_COLUMNS = ["group_id", "topic", "partition", "committed_offset", "is_group_in_doubt"]
RULE = "TXN-MARKER-UNREAD"

Key = tuple[str, str, int]  # (group, topic, partition)


@dataclass(frozen=True)
class InDoubt:
    """What one run leaves undecided: per offset, the one a late COMMIT marker re-creates."""

    offsets: Mapping[Key, int] = field(default_factory=dict)
    groups: frozenset[str] = frozenset()  # whose existence depends on an unread marker

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]]) -> InDoubt:
        """From `unread_marker_offsets` rows (`UNREAD_MARKER_COLUMNS`)."""
        offsets: dict[Key, int] = {}
        groups: set[str] = set()
        for r in rows:
            offsets[(r["group_id"], r["topic"], r["partition"])] = r["committed_offset"]
            if r["is_group_in_doubt"]:
                groups.add(r["group_id"])
        return cls(offsets, frozenset(groups))

    def offset(self, group_id: str | None, topic: str, partition: int) -> int | None:
        """The offset a COMMIT marker after the tombstone would re-create; None: not in doubt."""
        return self.offsets.get((group_id or "", topic, partition))

    def of_group(self, group_id: str | None) -> list[tuple[str, int, int]]:
        """(topic, partition, offset) of the group's offsets in doubt, sorted."""
        return sorted((t, p, o) for (g, t, p), o in self.offsets.items() if g == group_id)

    def note(self) -> str | None:
        """One line for the reader when anything is in doubt."""
        if not self.offsets:
            return None
        groups = (
            f"; groups whose existence depends on it: {len(self.groups)}" if self.groups else ""
        )
        return (
            f"note: {len(self.offsets)} offsets in doubt ({RULE}, table unread_marker_offsets):"
            " the run read no transaction markers; IN-DOUBT is the offset the broker shows if a"
            f" COMMIT marker came after the offset's tombstone{groups}"
        )


def of_run(output: str, run_id: str | None, groups: Iterable[str] = ()) -> InDoubt:
    """The offsets in doubt of a run (the latest succeeded one when `run_id` is None), only
    `groups`' when some are named; none when the output has no such table (older runs)."""
    from offsets_lib.io import sink, storage
    from offsets_lib.tools.lag_report import run_to_report

    if not storage.is_delta_table(sink.table_uri(output, "unread_marker_offsets")):
        return InDoubt()
    run_id = run_id or run_to_report(output)
    rows = sink.read_table(
        output, "unread_marker_offsets", run_id=run_id, columns=UNREAD_MARKER_COLUMNS
    ).to_pylist()
    wanted = set(groups)
    return InDoubt.of(r for r in rows if not wanted or r["group_id"] in wanted)


def with_lag_rows(rows: list[dict[str, Any]], in_doubt: InDoubt) -> list[dict[str, Any]]:
    """Lag rows (`audit.lag.LAG_COLUMNS`) with `in_doubt_offset` on each, plus one row per
    offset in doubt the run has deleted (no committed offset, so no lag)."""
    out = [
        {**r, "in_doubt_offset": in_doubt.offset(r["group_id"], r["topic"], r["partition"])}
        for r in rows
    ]
    listed = {(r["group_id"], r["topic"], r["partition"]) for r in rows}
    for (group, topic, partition), offset in sorted(in_doubt.offsets.items()):
        if (group, topic, partition) not in listed:
            out.append(
                {"group_id": group, "topic": topic, "partition": partition,
                 "committed_offset": None, "log_end_offset": None, "lag": None,
                 "last_commit_at": None, "seconds_since_commit": None, "in_doubt_offset": offset}
            )  # fmt: skip
    return out
