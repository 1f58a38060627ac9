"""io/storage.py and session.s3a_conf: one URI, the same objects for Spark, pyarrow, delta-rs."""

from __future__ import annotations

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
    assert storage.is_object_store("s3a://b/x") and not storage.is_object_store("/data/x")


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
    merged = session._merged(
        {"spark.jars.packages": "a:b:1", "x": "1"}, {"spark.jars.packages": "c:d:2,a:b:1"}
    )
    assert merged == {"spark.jars.packages": "a:b:1,c:d:2", "x": "1"}
