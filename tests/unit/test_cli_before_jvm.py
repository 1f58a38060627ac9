"""`offsets run` reports input and usage errors before any JVM starts (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.cli.run_command import run_options
from offsets_lib.job import local_tuning, session


def test_missing_input_path_exits_3_without_spark(no_spark: None, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dump"
    result = CliRunner().invoke(
        main, ["run", "--input", str(missing), "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == 3
    assert result.output == f"offsets: parquet input not found: {missing}\n"


def test_unreadable_profile_exits_2_without_spark(no_spark: None, tmp_path: Path) -> None:
    profile = tmp_path / "broken.toml"
    profile.write_text("source = [unclosed\n")
    result = CliRunner().invoke(main, ["run", "--conf", str(profile)])
    assert result.exit_code == 2
    assert result.output.startswith(f"offsets: profile '{profile}' is not valid TOML")


def test_output_or_database_is_required(no_spark: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--input", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == "offsets: --output PATH (or --database NAME) is required\n"


@pytest.mark.parametrize(("requested", "writer"), [(None, "delta-rs"), ("spark", "spark")])
def test_database_tables_are_written_by_delta_rs_unless_asked(
    requested: str | None, writer: str
) -> None:
    kw = {
        "source": "parquet",
        "inputs": ("dump/",),
        "bootstrap_servers": None,
        "as_of": None,
        "kafka_options": (),
        "max_reject_ratio": 0.01,
        "database": "audit",
        "output": None,
        "delta_writer": requested,
        "run_id": "r1",
        "retention": "7d",
        "coordinator": "new",
        "split_commits": "auto",
        "topic": "__consumer_offsets",
    }
    options = run_options(kw, now_ms=0)
    assert (options.database, options.delta_writer, options.output_given) == (
        "audit",
        writer,
        False,
    )


def test_local_sessions_use_every_core_and_load_delta_and_kafka() -> None:
    conf = session.local_conf()
    assert session.LOCAL_MASTER == "local[*]"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    packages = session.jvm_packages()
    assert packages[0].startswith("io.delta:delta-spark_4.2_2.13:")
    assert packages[1] == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
    assert conf["spark.jars.packages"] == ",".join(packages)
    on_class_path = local_tuning.tuned(conf).get("spark.driver.extraClassPath", "")
    assert "delta-spark" in on_class_path or not local_tuning.resolved_jars()
    assert "-Doffsets.log.level=error" in conf["spark.driver.extraJavaOptions"]
    verbose = session.local_conf(verbose=True)["spark.driver.extraJavaOptions"]
    assert "-Doffsets.log.level=warn" in verbose


def test_local_driver_jvms_map_the_class_archive_that_setup_built(monkeypatch, tmp_path) -> None:
    """`make setup` built the archive for this Java and these jars; a session maps it (quietly:
    a JVM of another build ignores it) and starts as before when there is none."""
    archive = local_tuning.class_archive()
    assert archive is not None and archive.exists(), "make setup builds the class archive"
    options = local_tuning.tuned(session.local_conf())[session.JAVA_OPTIONS].split()
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert {"-Xshare:auto", "-Xlog:cds=off"} <= set(options)
    monkeypatch.setattr(local_tuning, "class_archive", lambda: tmp_path / "none.jsa")
    tuned = local_tuning.tuned(session.local_conf())
    assert "SharedArchiveFile" not in tuned[session.JAVA_OPTIONS]


def test_catalog_conf_puts_the_metastore_in_the_warehouse(tmp_path: Path) -> None:
    conf = session.catalog_conf(tmp_path)
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path.resolve())
    assert (
        f"databaseName={tmp_path.resolve()}/metastore_db"
        in (conf["spark.hadoop.javax.jdo.option.ConnectionURL"])
    )
    resources = conf["spark.hadoop.hive.downloaded.resources.dir"]
    assert resources == str(tmp_path.resolve() / "hive_resources")
    assert session.catalog_conf(None) == {}


class _Session:
    """What `local_tuning.remember_resolved_jars` reads of a session: its resolved conf."""

    def __init__(self, conf: dict[str, str]) -> None:
        self._conf = conf

    @property
    def sparkContext(self) -> _Session:
        return self

    def getConf(self) -> _Session:
        return self

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._conf.get(key, default)


def test_the_jars_manifest_lists_only_the_resolution_of_our_packages(monkeypatch, tmp_path):
    """A session that resolved S3A's packages with ours (the first session of `make setup`)
    does not write the manifest every later session loads: its AWS SDK bundle alone is
    ~690 MB, copied at each local session's start."""
    monkeypatch.setattr(local_tuning, "ivy_jars_folder", lambda: tmp_path / "jars")
    jars = [tmp_path / name for name in ("delta.jar", "kafka.jar", "aws-bundle.jar")]
    for jar in jars:
        jar.write_bytes(b"")
    uris = [f"file://{jar}" for jar in jars]
    ours = ",".join(session.jvm_packages())
    with_s3a = f"{ours},{session.s3a_packages()[0]}"
    local_tuning.remember_resolved_jars(
        _Session({"spark.jars.packages": with_s3a, "spark.jars": ",".join(uris)})
    )
    assert local_tuning.resolved_jars() == []
    local_tuning.remember_resolved_jars(
        _Session({"spark.jars.packages": ours, "spark.jars": ",".join(uris[:2])})
    )
    assert local_tuning.resolved_jars() == uris[:2]
    assert f"offsets-lib-{local_tuning.MANIFEST_VERSION}-" in local_tuning._manifest().name


def test_a_local_driver_has_the_resolved_jars_on_its_class_path_but_not_spark_own(tmp_path):
    """A local session puts the resolved jars on the driver's class path (the local executor
    copies spark.jars at every start), without the artifacts Spark ships in its own version; a
    cluster master has Spark resolve the packages (no local tuning)."""
    ivy = "file:///ivy/jars/"
    jars = [
        f"{ivy}io.delta_delta-spark_4.2_2.13-4.4.0.jar",
        f"{ivy}org.apache.kafka_kafka-clients-3.9.2.jar",
        f"{ivy}com.fasterxml.jackson.core_jackson-databind-2.13.5.jar",  # Spark has 2.21
        f"{ivy}org.apache.hadoop_hadoop-client-api-3.5.0.jar",  # Spark has the same
    ]
    assert local_tuning.driver_class_path(jars) == [
        "/ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar",
        "/ivy/jars/org.apache.kafka_kafka-clients-3.9.2.jar",
    ]
    cluster = session.new_session(master="spark://127.0.0.1:7077").conf
    assert cluster["spark.jars.packages"] == ",".join(session.jvm_packages())
    assert "spark.driver.extraClassPath" not in cluster
    if local_tuning.resolved_jars():  # make setup resolved them
        local = local_tuning.tuned(session.local_conf())
        assert "spark.driver.extraClassPath" in local and "spark.jars.packages" not in local


def test_a_quick_start_jvm_compiles_with_c1_only() -> None:
    """QUICK_START_JIT goes to the driver JVM of a quick-start session only."""
    assert local_tuning.QUICK_START_JIT == ("-XX:TieredStopAtLevel=1",)
    conf = session.local_conf()
    quick = local_tuning.tuned(conf, quick_start=True)[session.JAVA_OPTIONS].split()
    default = local_tuning.tuned(conf)[session.JAVA_OPTIONS].split()
    assert [o for o in quick if o not in default] == ["-XX:TieredStopAtLevel=1"]
    assert local_tuning.is_quick_start(local_tuning.QUICK_START_MAX_RECORDS)
    assert not local_tuning.is_quick_start(local_tuning.QUICK_START_MAX_RECORDS + 1)


def test_only_kafka_runs_of_few_new_records_with_delta_rs_start_quick(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The records the connector reads since the stored checkpoint decide (--full: all), and
    only while delta-rs (and the file shuffle) keep the rest of the records out of the JVM
    (a relative --output too: pyarrow checks its staging folder as the run does)."""
    from dataclasses import replace

    from offsets_lib.io import incremental
    from offsets_lib.job import entry
    from offsets_lib.job.run import RunOptions

    monkeypatch.setattr(local_tuning, "QUICK_START_MAX_RECORDS", 100)
    out = str(tmp_path / "tables")
    stored = incremental.Checkpoint("t", {0: 950, 1: 1000}, sequence=3, kept_id="a@3")
    asked = []

    def checkpoint(output: str, topic: str) -> incremental.Checkpoint:
        asked.append((output, topic))
        return stored

    monkeypatch.setattr(incremental, "read_checkpoint", checkpoint)
    kafka = RunOptions(
        output=out,
        run_id="r",
        source="kafka",
        topic="t",
        kafka_options={"bootstrap.servers": "b:9092"},
    )
    ends = {0: 1000, 1: 1050}  # 50 + 50 new records
    assert entry.quick_start(kafka, ends)
    assert asked == [(out, "t")]
    monkeypatch.chdir(tmp_path)  # a relative --output: its staging folder is made absolute
    assert entry.quick_start(replace(kafka, output="tables"), ends)
    assert not entry.quick_start(kafka, {0: 1000, 1: 1051})
    assert not entry.quick_start(replace(kafka, full=True), ends)  # 2050 records
    spark_writer = replace(kafka, delta_writer="spark")
    assert not entry.quick_start(spark_writer, ends)
    database_only = replace(kafka, output_given=False, database="audit")
    assert not entry.quick_start(database_only, ends)
    monkeypatch.setattr(incremental, "read_checkpoint", lambda _output, _topic: None)
    assert not entry.quick_start(kafka, ends)  # the first run
    dump = RunOptions(output=out, run_id="r", inputs=("dump",))
    assert not entry.quick_start(dump, None)


def test_kafka_option_files_are_made_absolute_and_checked_before_spark(
    no_spark: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executors read the CA and keystores in their own working folders: the driver gives
    them absolute paths, and a missing file is one line (exit 3) before any JVM."""
    from offsets_lib.io.sources.kafka import with_absolute_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    given = {"bootstrap.servers": "b:9093", "ssl.ca.location": "tls/ca.pem"}
    assert with_absolute_files({**given, "ssl.ca.location": "probe"})["ssl.ca.location"] == "probe"
    assert with_absolute_files(given) == {**given, "ssl.ca.location": str(tmp_path / "tls/ca.pem")}
    run = ["run", "--source", "kafka", "--bootstrap-servers", "b:9093", "--output", "out"]
    missing = ["--kafka-option", "ssl.keystore.location=tls/client.p12"]
    result = CliRunner().invoke(main, [*run, *missing])
    assert result.exit_code == 3, result.output
    assert result.output == (
        "offsets: --kafka-option ssl.keystore.location=tls/client.p12: no such file"
        f" ({tmp_path / 'tls/client.p12'})\n"
    )
