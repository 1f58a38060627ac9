"""io/storage.py and session.s3a_conf: one URI, the same objects for Spark, pyarrow, delta-rs."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsets_lib.io import storage
from offsets_lib.job import session


@pytest.fixture
def s3_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret")


def test_hadoop_uris_are_named_as_pyarrow_and_delta_rs_name_them() -> None:
    assert storage.arrow_uri("s3a://b/tables/offsets") == "s3://b/tables/offsets"
    assert storage.arrow_uri("s3n://b/x") == "s3://b/x"
    assert storage.arrow_uri("file:/data/x") == "file:///data/x"
    assert storage.arrow_uri("/data/x") == "/data/x"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("file:/tmp/x", "/tmp/x"),  # Spark's and Hadoop's form
        ("file:///tmp/x/", "/tmp/x"),
        ("file://localhost/tmp/x", "/tmp/x"),
        ("/tmp/a/../x", "/tmp/x"),
        ("dbfs:/mnt/a/", "dbfs:/mnt/a"),  # a scheme without "//" is no local path
        ("s3://bucket/tables/", "s3://bucket/tables"),
        ("s3a://bucket/tables", "s3a://bucket/tables"),
        (
            "abfss://audit@account.dfs.core.windows.net/tables/",
            "abfss://audit@account.dfs.core.windows.net/tables",
        ),
    ],
)
def test_every_location_is_named_one_way(given: str, named: str) -> None:
    assert storage.location(given) == named


def test_a_relative_location_is_below_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert storage.location("out/tables") == f"{tmp_path}/out/tables"
    assert storage.location("file:out") == f"{tmp_path}/out"
    assert storage.table_uri("out/", "offsets") == f"{tmp_path}/out/offsets"


def test_a_table_is_named_below_its_root_whatever_the_root_looks_like() -> None:
    assert storage.table_uri("file:/tmp/x", "offsets") == "/tmp/x/offsets"
    assert storage.table_uri("file:///tmp/x/", "runs") == "/tmp/x/runs"
    assert storage.table_uri("/", "runs") == "/runs"
    assert storage.table_uri("dbfs:/mnt/a", "offsets") == "dbfs:/mnt/a/offsets"
    assert storage.table_uri("s3://b/t/", "offsets") == "s3://b/t/offsets"
    assert storage.table_uri("s3a://b/t", "offsets") == "s3a://b/t/offsets"
    assert storage.table_uri("abfss://c@a.dfs.core.windows.net/t", "runs") == (
        "abfss://c@a.dfs.core.windows.net/t/runs"
    )


def test_local_paths_keep_what_was_given() -> None:
    assert storage.local_path("file:/tmp/x") == "/tmp/x"
    assert storage.local_path("file:///tmp/x") == "/tmp/x"
    assert storage.local_path("dump/*.parquet") == "dump/*.parquet"
    assert storage.local_path("C:/dump") == "C:/dump"  # a drive letter is no scheme
    for remote in ("dbfs:/mnt/a", "s3://b/x", "s3a://b/x", "abfss://c@a/x", "file://host/x"):
        assert storage.local_path(remote) is None, remote
        assert not storage.is_local(remote)
    assert [storage.scheme(u) for u in ("/x", "file:/x", "dbfs:/x", "S3A://b", "C:/x")] == [
        "",
        "file",
        "dbfs",
        "s3a",
        "",
    ]


def test_delta_rs_commits_conditionally_to_the_configured_endpoint(s3_env: None) -> None:
    assert storage.delta_options("s3a://b/t") == {
        "AWS_CONDITIONAL_PUT": "etag",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
    }
    assert storage.delta_options("/data/t") == {}


def test_s3a_conf_has_the_endpoint_path_style_and_packages_but_no_secret(s3_env: None) -> None:
    conf = session.s3a_conf(["s3a://b/dump", "s3a://b/tables"])
    assert conf["spark.jars.packages"] == f"org.apache.hadoop:hadoop-aws:{session.hadoop_version()}"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.executorEnv.AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert not any("very-secret" in v or "key-id" in v for v in conf.values())
    assert session.s3a_conf(["/data/dump", "/data/tables"]) == {}  # local runs fetch nothing


def test_package_lists_are_appended_not_replaced() -> None:
    merged = session.merged_settings(
        {"spark.jars.packages": "a:b:1", "x": "1"}, {"spark.jars.packages": "c:d:2,a:b:1"}
    )
    assert merged == {"spark.jars.packages": "a:b:1,c:d:2", "x": "1"}


def test_delta_dataset_answers_without_the_delta_stats(tmp_path) -> None:
    """Files whose add actions carry no or wrong min/max (delta-rs' own dataset then skips
    them): every row is still found, and a filter on the partition column skips the other
    partitions' files."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from deltalake import Schema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    long_id = "core-aggregator-00177-" + "x" * 40
    schema = pa.schema([("group_id", pa.string()), ("run_id", pa.string())])
    actions = []
    for run_id, ids, stats in (
        ("r1", ["a", long_id], '{"numRecords":2}'),  # no min/max at all
        ("r2", [long_id, "z"], '{"numRecords":2,"minValues":{"group_id":"y"}}'),  # a wrong min
    ):
        folder = tmp_path / "t" / f"run_id={run_id}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"group_id": ids}), folder / "part-0.parquet")
        actions.append(
            AddAction(
                path=f"run_id={run_id}/part-0.parquet",
                size=(folder / "part-0.parquet").stat().st_size,
                partition_values={"run_id": run_id},
                modification_time=0,
                data_change=True,
                stats=stats,
            )
        )
    uri = str(tmp_path / "t")
    create_table_with_add_actions(uri, Schema.from_arrow(schema), actions, "error", ["run_id"])
    dataset = storage.delta_dataset(uri)
    found = dataset.to_table(filter=ds.field("group_id") == long_id).sort_by("run_id")
    assert found.to_pylist() == [
        {"group_id": long_id, "run_id": "r1"},
        {"group_id": long_id, "run_id": "r2"},
    ]
    r2 = ds.field("run_id") == "r2"
    assert [f.path.rsplit("/", 2)[-2] for f in dataset.get_fragments(filter=r2)] == ["run_id=r2"]
    assert dataset.to_table(filter=r2).column("group_id").to_pylist() == [long_id, "z"]


def test_delta_dataset_reads_partitions_whose_values_the_writer_escaped(tmp_path) -> None:
    """Airflow's run ids hold ':' and '+': their folders are escaped ("%3A"), and the log's
    paths escape that again ("%253A")."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from deltalake import write_deltalake

    run_ids = ["scheduled__2026-11-24T06:00:00+00:00", "manual run 1", "plain"]
    table = pa.table({"run_id": run_ids, "v": [1, 2, 3]})
    write_deltalake(str(tmp_path / "t"), table, partition_by=["run_id"])
    dataset = storage.delta_dataset(str(tmp_path / "t"))
    for run_id, v in zip(run_ids, [1, 2, 3], strict=True):
        rows = dataset.to_table(filter=ds.field("run_id") == run_id).to_pylist()
        assert rows == [{"run_id": run_id, "v": v}]
