"""DEC-LIMIT against released brokers: a consumer group's metadata value with 10,001 unknown
tagged fields (of size 0) loads on 4.3.1 and fails its offsets partition's load on 4.3.2, as the
job's `load_failures` predicts for each release; 10,000 load on both.

The records are produced raw as ``__admin_client`` and replayed on a restart, as in
test_load_rows.py (whose broker helpers this reuses), one short-lived broker per release:

- ``tags-at`` (partition 2): the value with 10,000 tags: every release loads it;
- ``tags-over`` (partition 1): the value with 10,001 tags: 4.3.2 fails the load;
- ``loads`` (partition 0): a plain offset commit, the readiness probe's group.

Each group has a committed offset: a partition that loaded answers it (OffsetFetch).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib import wire
from offsets_lib.audit.partition_claims import rule_of
from offsets_lib.cli import main as offsets_cli
from offsets_lib.wire.codec import Writer
from tests.broker.recorder import Recorder
from tests.broker.test_load_rows import (
    CLEAN,
    OFFSETS_PARTITIONS,
    _offsets_topic_ready,
    _Reloading,
    java_hash,
    observed_and_predicted,
    release_of,
    reloaded,
    write_raw,
)
from tests.reference.releases import refuses_reader_limits

RELEASES = ("4.3.1", "4.3.2")
SITUATION = "load-dec-limit"
# group -> (offsets partition, unknown tags of its metadata value; None: no metadata value)
GROUPS = {CLEAN: (0, None), "tags-over": (1, 10_001), "tags-at": (2, 10_000)}
COMMITTED = 17


def metadata_value(tags: int) -> bytes:
    """ConsumerGroupMetadataValue v0 (epoch 1) whose tagged-field section holds `tags` unknown
    tags (100) of size 0."""
    value = wire.encode_value(3, 0, {"Epoch": 1})
    section = Writer()
    section.uvarint(tags)
    return value[:-1] + bytes(section.out) + b"\x64\x00" * tags


def group_records(group: str, tags: int | None) -> list[tuple[bytes, bytes | None]]:
    records = []
    if tags is not None:
        records.append((wire.encode_key(3, {"GroupId": group}), metadata_value(tags)))
        target = wire.encode_value(6, 0, {"AssignmentEpoch": 1})
        records.append((wire.encode_key(6, {"GroupId": group}), target))
    commit = {"offset": COMMITTED, "leaderEpoch": -1, "metadata": "",
              "commitTimestamp": int(time.time() * 1000)}  # fmt: skip
    key = wire.encode_key(1, {"group": group, "topic": "orders", "partition": 0})
    records.append((key, wire.encode_value(1, 3, commit)))
    return records


def observe(release: str, work: Path) -> dict:
    """Start `release`'s broker, write the groups raw, restart it, take its answers, stop it."""
    broker = _Reloading(
        release, work / "broker", settings={"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}
    )
    broker.start()
    try:
        _offsets_topic_ready(broker.bootstrap)
        records = {}
        for group, (partition, tags) in GROUPS.items():
            assert java_hash(group) % OFFSETS_PARTITIONS == partition, group
            records[partition] = group_records(group, tags)
        write_raw(broker.bootstrap, records)
        failed, answers = reloaded(broker, {g: partition for g, (partition, _) in GROUPS.items()})
    finally:
        broker.stop()
    return {"failed": failed, "answers": answers}


def job_failures(dump: Path, tables: Path, release: str) -> dict[int, list[dict]]:
    """The job's load_failures rows that fail the load on `release`, per offsets partition."""
    from deltalake import DeltaTable

    args = ["run", "--source", "parquet", "--input", str(dump), "--output", str(tables)]
    args += ["--run-id", "load", "--coordinator", "new"]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    rows = DeltaTable(str(tables / "load_failures")).to_pyarrow_table().to_pylist()
    refused = refuses_reader_limits(release_of(release))
    out: dict[int, list[dict]] = {p: [] for p in range(OFFSETS_PARTITIONS)}
    for r in rows:
        if rule_of(r["failed_check"]) != "DEC-LIMIT" or refused:
            out[r["offsets_partition"]].append(r)
    return out


_DONE: dict[str, dict] = {}


@pytest.fixture(scope="module")
def loads(tmp_path_factory) -> Iterator[Callable[[str], dict]]:
    """Per release, once: the broker's loads and answers beside the job's prediction."""

    def load(release: str) -> dict:
        if release not in _DONE:
            work = tmp_path_factory.mktemp(f"limits-{release}")
            _DONE[release] = observed_and_predicted(
                "tests.broker.test_load_limits", release, work, job_failures
            )
        return _DONE[release]

    yield load


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("release", RELEASES)
def test_tag_count_over_the_limit_fails_the_load_as_the_release_does(
    loads, broker_recorder: Recorder, release: str
) -> None:
    seen = loads(release)
    failed, answers, predicted = seen["failed"], seen["answers"], seen["predicted"]
    for group, (partition, _) in GROUPS.items():
        broker_loads = partition not in failed and answers[group] is not None
        broker_recorder.compare(
            release, SITUATION, "reload", f"{group} offsets partition {partition} loads",
            broker_loads, not predicted[partition],
        )  # fmt: skip
        broker_recorder.compare(
            release, SITUATION, "reload", f"{group} orders/0 committed_offset",
            answers[group], COMMITTED if not predicted[partition] else None,
        )  # fmt: skip
        for row in predicted[partition]:  # the record the job names is the one the broker refused
            assert row["failed_check"] == "TAGGED_FIELD_COUNT_OVER_10000"
            record = f"Deserializing record DefaultRecord(offset={row['log_offset']},"
            assert record in failed[partition]
    bad = broker_recorder.disagreements(release, SITUATION)
    assert not bad, "\n".join(f"{c.what}: broker={c.broker!r} job={c.job!r}" for c in bad)
    refusing = {GROUPS["tags-over"][0]} if refuses_reader_limits(release_of(release)) else set()
    assert set(failed) == refusing


def main(argv: list[str]) -> int:
    release, work = argv
    observed = observe(release, Path(work))
    (Path(work) / "observed.json").write_text(json.dumps(observed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
