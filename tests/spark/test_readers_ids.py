"""Every reader right for every id: group ids and topic names of 1 to 249 characters, long
shared prefixes, non-ASCII, emoji, spaces and ':' on tables written by a real `offsets run`.

One small dump (a classic Stable group per id, two committed partitions each, log-end offsets
from a file), one run for the module. Each group goes through `fetch`, `fence-check`, `lag`,
`inspect` and the notebook queries; filtered reads through delta-rs, its pyarrow dataset,
Polars, DuckDB over Arrow and Spark-Delta each equal the unfiltered read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from pyspark.sql import functions as F

from offsets_lib.cli import main
from offsets_lib.io import sink
from offsets_lib.tools import notebook_queries
from tests.reference import scenario

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "ids"
AS_OF_MS = 1_700_000_000_000
GENERATION = 3

GROUP_IDS = [
    "g",
    "a" * 32,
    "a" * 33,
    "a" * 32 + "~tilde",  # cut max: the tie-breaker U+007F after '~' (U+007E)
    "0" + "x" * 248,  # 249 characters, the smallest id
    "shared-" + "p" * 60 + "-1",  # a long shared prefix
    "shared-" + "p" * 60 + "-2",
    "grüße-" * 10,
    "グループ-" * 10,
    "🚀" * 40,  # the largest id: a file's max
    "🚀 rocket group",
    "my group",
    " leading space",
    "app",
    "app:prod",  # also `app` + topic `prod` in --group G:TOPIC form
    "app:prod:0",
]
TOPICS = [
    "t",
    "x" * 249,
    "topic." + "q" * 100 + ".a",
    "topic." + "q" * 100 + ".b",
    "prod",
]
END_MARGIN = 50  # a partition's log-end offset: its largest committed offset + this


def _topic(index: int) -> str:
    return TOPICS[index % len(TOPICS)]


def _committed(index: int, partition: int) -> int:
    return 100 * (partition + 1) + index


def _member(index: int) -> str:
    return f"member-{index}"


def _records() -> list[dict]:
    records = []
    for i, group in enumerate(GROUP_IDS):
        topic = _topic(i)
        records.append(
            {
                "partition": i % 4,  # a group's records stay on one offsets-topic partition
                "type": "group_metadata",
                "key": {"group": group},
                "value": {
                    "version": 3,
                    "protocol_type": "consumer",
                    "generation": GENERATION,
                    "protocol": "range",
                    "leader": _member(i),
                    "current_state_timestamp_ms": AS_OF_MS - 5000,
                    "members": [
                        {
                            "member_id": _member(i),
                            "group_instance_id": None,
                            "client_id": "c",
                            "client_host": "/10.0.0.1",
                            "rebalance_timeout_ms": 300000,
                            "session_timeout_ms": 45000,
                            "subscription": {
                                "version": 1,
                                "topics": [topic],
                                "user_data": None,
                                "owned_partitions": [],
                            },
                            "assignment": {
                                "version": 1,
                                "partitions": [{"topic": topic, "partitions": [0, 1]}],
                                "user_data": None,
                            },
                        }
                    ],
                },
            }
        )
        for partition in (0, 1):
            records.append(
                {
                    "partition": i % 4,
                    "type": "offset_commit",
                    "key": {"group": group, "topic": topic, "partition": partition},
                    "value": {
                        "version": 3,
                        "offset": _committed(i, partition),
                        "leader_epoch": -1,
                        "metadata": "",
                        "commit_timestamp_ms": AS_OF_MS - 1000 * (i + 1),
                    },
                }
            )
    return records


def _dump_rows() -> list[dict]:
    """The groups over four offsets-topic partitions (several data files per table)."""
    records = _records()
    for offset, record in enumerate(records):
        record.update(offset=offset, timestamp_ms=AS_OF_MS - 60_000)
    return scenario.scenario_rows({"records": records})


def _ends() -> dict[tuple[str, int], int]:
    ends: dict[tuple[str, int], int] = {}
    for i in range(len(GROUP_IDS)):
        for partition in (0, 1):
            key = (_topic(i), partition)
            ends[key] = max(ends.get(key, 0), _committed(i, partition) + END_MARGIN)
    return ends


def expected_offsets(group: str) -> list[tuple[str, int, int, int]]:
    """(topic, partition, committed offset, lag) of a group's partitions."""
    i = GROUP_IDS.index(group)
    ends = _ends()
    return [
        (_topic(i), p, _committed(i, p), ends[(_topic(i), p)] - _committed(i, p)) for p in (0, 1)
    ]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def id_tables(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(dump file, tables root) of one run over the dump."""
    root = tmp_path_factory.mktemp("reader_ids")
    dump = root / "dump.parquet"
    pq.write_table(pa.Table.from_pylist(_dump_rows()), dump)
    ends = root / "ends.csv"
    ends.write_text(
        "topic,partition,log_end_offset\n"
        + "".join(f"{t},{p},{o}\n" for (t, p), o in sorted(_ends().items()))
    )
    output = str(root / "tables")
    args = ["run", "--source", "parquet", "--input", str(dump), "--output", output]
    args += ["--as-of", str(AS_OF_MS), "--run-id", RUN_ID, "--end-offsets", str(ends)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return str(dump), output


# ---- the CLI readers -----------------------------------------------------------------------


def _fetched(stdout: str) -> dict[str, list[tuple[str, int, int, int]]]:
    doc = json.loads(stdout)
    return {
        g["group_id"]: [
            (p["topic"], p["partition"], p["committed_offset"], p["lag"]) for p in g["partitions"]
        ]
        for g in doc["groups"]
    }


def test_fetch_every_group(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    everything = invoke("fetch", "--output", output, "--all-groups", "--json")
    assert everything.exit_code == 0, everything.output
    assert _fetched(everything.stdout) == {g: expected_offsets(g) for g in GROUP_IDS}
    for group in GROUP_IDS:
        for option in ("--group-id", "--group"):  # a known id is never split at ':'
            result = invoke("fetch", "--output", output, option, group, "--json")
            assert result.exit_code == 0, result.output
            assert _fetched(result.stdout) == {group: expected_offsets(group)}, (option, group)


def test_fetch_group_topic_form_keeps_working(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    i = GROUP_IDS.index("my group")
    result = invoke("fetch", "--output", output, "--group", f"my group:{_topic(i)}:1", "--json")
    assert result.exit_code == 0, result.output
    assert _fetched(result.stdout) == {"my group": expected_offsets("my group")[1:]}
    unknown = invoke("fetch", "--output", output, "--group", "nobody:prod:0", "--json")
    assert unknown.exit_code == 0, unknown.output
    assert _fetched(unknown.stdout) == {"nobody": [("prod", 0, -1, None)]}


def test_fence_check_every_group(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    for i, group in enumerate(GROUP_IDS):
        args = ["fence-check", "--output", output, "--group", group, "--member", _member(i)]
        args += ["--member-epoch", str(GENERATION), "--topic", _topic(i), "--partition", "0"]
        result = invoke(*args, "--json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["group_type"], doc["group_state"]) == ("classic", "Stable"), group
        assert doc["strict"]["outcome"] == "ACCEPTED", (group, doc["strict"])


def test_lag_every_group(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    for group in GROUP_IDS:
        result = invoke("lag", "--output", output, "--group", group, "--json")
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert [
            (r["group_id"], r["topic"], r["partition"], r["committed_offset"], r["lag"])
            for r in rows
        ] == [(group, *row) for row in expected_offsets(group)]


def test_inspect_every_group(id_tables: tuple[str, str]) -> None:
    dump, _output = id_tables
    for group in GROUP_IDS:
        result = invoke("inspect", "--input", dump, "--group", group, "--json")
        assert result.exit_code == 0, result.output
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(records) == 3, group  # its group metadata and two offset commits
        assert {r["group_id"] for r in records} == {group}


def test_notebook_queries_every_group(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    run = notebook_queries.load_run(output)
    offsets = run.tables["offsets"]
    lag = run.tables["lag"]
    for group in GROUP_IDS:
        mine = offsets[offsets["group_id"] == group].sort_values("partition")
        found = mine[["topic", "partition", "committed_offset"]].itertuples(index=False)
        assert [tuple(row) for row in found] == [row[:3] for row in expected_offsets(group)]
    worst = notebook_queries.worst_lagging_groups(lag, n=len(GROUP_IDS))
    assert dict(zip(worst["group_id"], worst["total_lag"], strict=True)) == {
        g: sum(row[3] for row in expected_offsets(g)) for g in GROUP_IDS
    }


# ---- filtered reads of other readers ---------------------------------------------------------

KEYS = {
    "offsets": ["group_id", "topic", "partition"],
    "groups": ["group_id"],
    "members": ["group_id", "member_id"],
    "offset_decisions": ["group_id", "topic", "partition"],
    "lag": ["group_id", "topic", "partition"],
}


def _keys(rows: list[dict], keys: list[str]) -> list[tuple]:
    return sorted(tuple(r[k] for k in keys) for r in rows)


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize("name", list(KEYS))
def test_filtered_reads_equal_the_unfiltered_read(
    spark, id_tables: tuple[str, str], name: str
) -> None:
    _dump, output = id_tables
    uri, keys = sink.table_uri(output, name), KEYS[name]
    table = DeltaTable(uri)
    everything = table.to_pyarrow_table(columns=keys).to_pylist()
    filters = [("group_id", g) for g in GROUP_IDS]
    if "topic" in keys:
        filters += [("topic", t) for t in TOPICS]
    dataset = table.to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("t", dataset)
    frames = []
    for column, value in filters:
        want = _keys([r for r in everything if r[column] == value], keys)
        assert want, (column, value)
        got = {
            "delta-rs": table.to_pyarrow_table(columns=keys, filters=[(column, "=", value)]),
            "pyarrow": dataset.to_table(columns=keys, filter=ds.field(column) == value),
            "polars": pl.scan_delta(uri).filter(pl.col(column) == value).select(keys).collect(),
        }
        for reader, result in got.items():
            assert _keys(result.to_dicts() if reader == "polars" else result.to_pylist(), keys) == (
                want
            ), (reader, column, value)
        select = ", ".join(f'"{k}"' for k in keys)
        rows = con.execute(f'SELECT {select} FROM t WHERE "{column}" = ?', [value]).fetchall()
        assert sorted(rows) == want, ("duckdb", column, value)
        frames.append(
            spark.read.format("delta")
            .load(uri)
            .where(F.col(column) == value)
            .select(F.lit(f"{column}={value}").alias("filter"), *keys)
        )
    # Spark-Delta: one job, each branch skipping files on its own filter
    by_filter: dict[str, list[tuple]] = {}
    for row in reduce(lambda a, b: a.unionByName(b), frames).collect():
        by_filter.setdefault(row["filter"], []).append(tuple(row[k] for k in keys))
    for column, value in filters:
        want = _keys([r for r in everything if r[column] == value], keys)
        assert sorted(by_filter.get(f"{column}={value}", [])) == want, ("spark", column, value)


def test_boolean_filters_equal_the_unfiltered_read(id_tables: tuple[str, str]) -> None:
    _dump, output = id_tables
    table = DeltaTable(sink.table_uri(output, "offsets"))
    count = table.to_pyarrow_table().num_rows
    dataset = table.to_pyarrow_dataset()
    assert dataset.count_rows(filter=ds.field("has_pending_transaction") == False) == count  # noqa: E712
    assert table.to_pyarrow_table(filters=[("has_pending_transaction", "=", False)]).num_rows == (
        count
    )


# ---- exit statuses ---------------------------------------------------------------------------

# An abort at interpreter exit hit 3-15 % of the calls that read through deltalake's Python
# file system: 20 runs of each Arrow-only reader miss it with a chance under 0.5 %. Readers
# that start a JVM (about 10 s each) run a few times: their exit is Spark's, not deltalake's.
RUNS, JVM_RUNS = 20, 3


def _offsets_command() -> list[str]:
    script = Path(sys.executable).with_name("offsets")
    return [str(script)] if script.exists() else [sys.executable, "-c", _CLI]


_CLI = "import sys; from offsets_lib.cli import main; sys.exit(main())"
_NOTEBOOK = (
    "import sys; from offsets_lib.tools.notebook_queries import load_run; "
    "run = load_run(sys.argv[1]); print(len(run.tables['offsets']))"
)


@pytest.mark.slow
def test_every_reader_exits_with_its_own_status(id_tables: tuple[str, str]) -> None:
    """Each reader, run RUNS (JVM_RUNS) times in its own process: every exit status is the
    command's."""
    dump, output = id_tables
    group = GROUP_IDS[4]
    offsets = _offsets_command()
    fence = ["fence-check", "--output", output, "--group", group, "--member", _member(4)]
    fence += ["--member-epoch", str(GENERATION), "--topic", _topic(4), "--partition", "0"]
    commands = {
        "fetch": ([*offsets, "fetch", "--output", output, "--group-id", group], 0, RUNS),
        "fetch without tables": (
            [*offsets, "fetch", "--output", dump, "--group", group],
            3,
            RUNS,
        ),
        "fence-check": ([*offsets, *fence], 0, RUNS),
        "lag": ([*offsets, "lag", "--output", output, "--group", group], 0, JVM_RUNS),
        "inspect": ([*offsets, "inspect", "--input", dump, "--group", group], 0, JVM_RUNS),
        "notebook queries": ([sys.executable, "-c", _NOTEBOOK, output], 0, RUNS),
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }

    def run(command: list[str]) -> int:
        done = subprocess.run(command, env=env, capture_output=True, check=False, timeout=300)
        return done.returncode

    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = {
            name: list(pool.map(run, [command] * runs))
            for name, (command, _, runs) in commands.items()
        }
    assert statuses == {name: [status] * runs for name, (_, status, runs) in commands.items()}
