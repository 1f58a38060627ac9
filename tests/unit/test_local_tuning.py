"""job/local_tuning.py goes only to a session this process starts with a local master: never
under spark-submit or a launcher's cluster master, never to a session that runs already (no
JVM is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from offsets_lib.job import local_tuning, session

LAUNCHER_VARIABLES = ("PYSPARK_GATEWAY_PORT", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME")


@pytest.fixture
def plain_process(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A process that no launcher started or configured (`offsets run` from a shell)."""
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _has_no_tuning(conf: dict[str, str]) -> bool:
    options = conf.get(session.JAVA_OPTIONS, "").split()
    return (
        not set(local_tuning.TUNED_CONF) & set(conf)
        and "spark.driver.extraClassPath" not in conf
        and not set(local_tuning.QUICK_START_JIT) & set(options)
        and not any(o.startswith("-XX:SharedArchiveFile") for o in options)
    )


def test_a_local_session_this_process_starts_is_tuned(plain_process) -> None:
    plan = session.new_session(quick_start=True, show_progress=False)
    assert (plan.master, plan.is_tuned) == ("local[*]", True)
    assert local_tuning.TUNED_CONF.items() <= plan.conf.items()
    assert plan.conf["spark.executorEnv.MALLOC_MMAP_MAX_"] == "0"
    options = plan.conf[session.JAVA_OPTIONS].split()
    assert "-XX:TieredStopAtLevel=1" in options
    assert f"-Dlog4j2.configurationFile={session.LOG4J2_CONF}" in options
    tests = session.new_session(master="local[2]", extra_conf={"spark.sql.shuffle.partitions": "2"})
    assert (tests.master, tests.is_tuned) == ("local[2]", True)
    assert tests.conf["spark.sql.shuffle.partitions"] == "2"  # extra_conf comes last
    assert "-XX:TieredStopAtLevel=1" not in tests.conf[session.JAVA_OPTIONS].split()


def test_under_spark_submit_only_storage_and_extra_settings_are_given(plain_process) -> None:
    """spark-submit started the JVM with the cluster's configuration: no layer of ours."""
    plain_process.setenv("PYSPARK_GATEWAY_PORT", "40000")
    plan = session.new_session(
        quick_start=True, storage_uris=["s3a://bucket/tables"], extra_conf={"spark.a": "1"}
    )
    assert (plan.master, plan.is_tuned) == (None, False)
    assert plan.conf == {**session.s3a_conf(["s3a://bucket/tables"]), "spark.a": "1"}
    assert session.new_session(quick_start=True).conf == {}


def test_a_cluster_master_given_to_the_launcher_gets_no_layer(plain_process, tmp_path) -> None:
    plain_process.setenv("PYSPARK_SUBMIT_ARGS", "--master yarn --deploy-mode client pyspark-shell")
    assert session.launcher_master() == "yarn"
    assert session.new_session(quick_start=True) == session.NewSession(None, {}, False)
    plain_process.setenv("PYSPARK_SUBMIT_ARGS", "--master=local[3] pyspark-shell")
    plan = session.new_session()
    assert (plan.master, plan.is_tuned) == ("local[3]", True)
    plain_process.delenv("PYSPARK_SUBMIT_ARGS")
    (tmp_path / "spark-defaults.conf").write_text(
        "# the edge node's defaults\nspark.master\tspark://10.0.0.5:7077\n"
    )
    plain_process.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert session.launcher_master() == "spark://10.0.0.5:7077"
    assert session.new_session(quick_start=True) == session.NewSession(None, {}, False)
    (tmp_path / "spark-defaults.conf").write_text("spark.master=yarn\n")
    assert session.launcher_master() == "yarn"


def test_a_cluster_master_this_process_starts_gets_our_layers_but_no_tuning(plain_process) -> None:
    plan = session.new_session(master="spark://127.0.0.1:7077", quick_start=True)
    assert (plan.master, plan.is_tuned) == ("spark://127.0.0.1:7077", False)
    assert plan.conf["spark.jars.packages"] == ",".join(session.jvm_packages())
    assert plan.conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert _has_no_tuning(plan.conf)


def test_a_running_session_is_returned_as_it_is(plain_process) -> None:
    """A notebook's session (or our own first one): no builder, no setting, no log level."""
    running = object()
    plain_process.setattr(session, "running_session", lambda: running)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a session was built")

    plain_process.setattr(session, "new_session", refuse)
    plain_process.setattr(SparkSession.Builder, "getOrCreate", refuse)
    got = session.get_or_create(quick_start=True, extra_conf={"spark.sql.shuffle.partitions": "9"})
    assert got is running


def test_the_running_session_is_the_active_one_or_none(plain_process) -> None:
    active = object()
    plain_process.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: active))
    assert session.running_session() is active
    plain_process.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    plain_process.setattr(SparkContext, "_active_spark_context", None)
    assert session.running_session() is None


def test_spark_defaults_without_a_master_leave_ours(plain_process, tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text("spark.executor.memory 4g\n")
    plain_process.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert session.launcher_master() is None
    assert session.new_session().master == "local[*]"


def test_the_metastore_service_a_new_session_would_ask(plain_process, tmp_path: Path) -> None:
    """hive.metastore.uris as the launcher would give it (PYSPARK_SUBMIT_ARGS' --conf over
    spark-defaults.conf, over hive-site.xml), only when the catalog is Hive's and no session
    runs: what `offsets` checks before a JVM starts."""
    plain_process.setattr(session, "running_session", lambda: None)
    plain_process.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert session.metastore_uris_to_start() is None  # no configuration at all
    (tmp_path / "hive-site.xml").write_text(
        "<configuration><property><name>hive.metastore.uris</name>"
        "<value> thrift://site:9083 </value></property></configuration>"
    )
    assert session.metastore_uris_to_start() is None  # Spark's in-memory catalog
    assert session.metastore_uris_to_start(warehouse=tmp_path) == "thrift://site:9083"
    (tmp_path / "spark-defaults.conf").write_text(
        "spark.sql.catalogImplementation  hive\n"
        "spark.hadoop.hive.metastore.uris=thrift://a:9083,thrift://b:9083\n"
    )
    assert session.metastore_uris_to_start() == "thrift://a:9083,thrift://b:9083"
    plain_process.setenv(
        "PYSPARK_SUBMIT_ARGS", "--conf spark.hadoop.hive.metastore.uris=thrift://c:1 pyspark-shell"
    )
    assert session.launcher_conf()["spark.sql.catalogImplementation"] == "hive"
    assert session.metastore_uris_to_start() == "thrift://c:1"
    plain_process.setattr(session, "running_session", lambda: object())
    assert session.metastore_uris_to_start() is None  # its catalog is what it is
    plain_process.setattr(session, "running_session", lambda: None)
    plain_process.setenv("PYSPARK_GATEWAY_PORT", "4711")  # spark-submit's JVM runs already
    assert session.metastore_uris_to_start() is None
