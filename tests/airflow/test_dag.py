"""jobs/airflow_dag.py imports cleanly in a real Airflow, and submits the job as intended.

Airflow and its Spark provider live in their own venv, ``.venv-airflow`` at the repository
root (created on the first run, ~1-2 min, then reused; ignored by git): the provider pulls
``pyspark-client``, which overwrites the project's ``pyspark``, so it must never be installed
into ``.venv``. A small script runs in that venv: it loads the DAG file with ``DagBag``
(AIRFLOW_HOME in a temp dir, no examples, no metadata database), renders the task's templates
for one data interval, builds the spark-submit command line offline, and prints JSON that
the assertions below check.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
DAG_FILE = ROOT / "jobs" / "airflow_dag.py"
VENV = ROOT / ".venv-airflow"
REQUIREMENTS = ("apache-airflow==3.3.2", "apache-airflow-providers-apache-spark==6.3.4")
STAMP = VENV / ".installed"
RELEASE = "/srv/offsets-audit/1.2.3"
# a deployment's `spark_default`, as tests/cluster/test_airflow_dag.py's (a client-mode driver)
CONNECTION = {
    "conn_type": "spark",
    "host": "spark://spark-master.example.internal",
    "port": 7077,
    "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"},
}
DEPLOY_MD = ROOT / "docs" / "deploy.md"
BEGIN, END = "<!-- BEGIN DAG COMMAND -->", "<!-- END DAG COMMAND -->"

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import pendulum

    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3
    except ImportError:
        from airflow.models.dagbag import DagBag  # Airflow 2
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    def task_report(dag, task_id):
        task = dag.get_task(task_id)
        end = pendulum.datetime(2026, 11, 21, 10, tz="UTC")
        context = {
            "data_interval_start": end.subtract(hours=1),
            "data_interval_end": end,
            "run_id": "scheduled__2026-11-21T09:00:00+00:00",
            "ts_nodash": "20261121T090000",
        }
        env = dag.get_template_env()
        rendered = {name: task.render_template(getattr(task, name), context, env)
                    for name in ("application", "py_files", "files", "name",
                                 "application_args", "env_vars")}
        hook = SparkSubmitHook(conn_id="spark_default", conf=task.conf,
                               packages=task.packages,
                               py_files=rendered["py_files"], files=rendered["files"],
                               archives=task._archives, env_vars=rendered["env_vars"],
                               name=rendered["name"],
                               application_args=rendered["application_args"])
        return dict(
            task_type=type(task).__name__,
            trigger_rule=str(getattr(task.trigger_rule, "value", task.trigger_rule)),
            template_fields=list(task.template_fields),
            raw={"application": task.application, "py_files": task.py_files,
                 "application_args": task.application_args},
            rendered=rendered,
            # Airflow's own private builder: the spark-submit line the provider would run
            command=hook._build_spark_submit_command(rendered["application"]),
        )

    def report():
        bag = DagBag(dag_folder=sys.argv[1])  # parses the file again: its settings are re-read
        out = {"import_errors": {k: str(v) for k, v in bag.import_errors.items()},
               "dag_ids": sorted(bag.dag_ids)}
        dag = bag.dags.get("kafka_offsets_audit")  # bag.get_dag() would query the metadata DB
        if dag is None:
            return out
        out.update(
            schedule=str(getattr(dag, "schedule", None) or dag.timetable.summary),
            catchup=dag.catchup,
            max_active_runs=dag.max_active_runs,
            downstream={t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks},
            prune=task_report(dag, "prune_runs"),
            report=task_report(dag, "report_run"),
            **task_report(dag, "audit_offsets"),
        )
        return out

    out = report()
    os.environ.update(json.loads(sys.argv[2]))  # a deployment's own profile and options
    out["configured"] = report()
    print("RESULT " + json.dumps(out, default=str))
    """
)
# A deployment's settings of the DAG (its docstring): its own profile, options that win over it
CONFIGURED = {
    "OFFSETS_AUDIT_PROFILE": "audit-eu.toml",
    "OFFSETS_AUDIT_OPTIONS": "--output 's3://audit eu/tables' --kafka-option client.id=eu",
    "OFFSETS_AUDIT_RETENTION": "--keep-runs 24",
}


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_airflow_venv() -> Path:
    """Create (once) the separate Airflow venv; a lock keeps parallel runs from racing."""
    wanted = "\n".join(REQUIREMENTS)
    lock_path = Path(tempfile.gettempdir()) / (
        "offsets-audit-airflow-" + hashlib.sha1(str(VENV).encode()).hexdigest()[:12] + ".lock"
    )
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if STAMP.is_file() and STAMP.read_text() == wanted and _venv_python().exists():
            return _venv_python()
        base = getattr(sys, "_base_executable", sys.executable)
        steps = [
            [base, "-m", "venv", "--clear", str(VENV)],
            [str(_venv_python()), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
            [str(_venv_python()), "-m", "pip", "install", "--quiet", *REQUIREMENTS],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=1500)
            if done.returncode != 0:
                pytest.fail(
                    f"creating {VENV} failed at {' '.join(step[-3:])}:\n"
                    + (done.stdout + done.stderr)[-3000:]
                )
        STAMP.write_text(wanted)
    return _venv_python()


@pytest.fixture(scope="module")
def dag_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_dag_report(tmp_path_factory.mktemp("airflow_home"))


def build_dag_report(home: Path) -> dict:
    """What the DAG file gives in a real Airflow (SCRIPT's JSON), with AIRFLOW_HOME `home`."""
    python = ensure_airflow_venv()
    script = home / "check_dag.py"
    script.write_text(SCRIPT)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
        and not k.startswith(("AIRFLOW", "OFFSETS_AUDIT_"))
    }
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(DAG_FILE.parent),
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps(CONNECTION),
        OFFSETS_AUDIT_RELEASE=RELEASE,
    )
    done = subprocess.run(
        [str(python), str(script), str(DAG_FILE), json.dumps(CONFIGURED)],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise AssertionError((done.stdout + done.stderr)[-4000:])
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_dag_imports_without_errors(dag_report: dict) -> None:
    assert dag_report["import_errors"] == {}
    assert dag_report["dag_ids"] == ["kafka_offsets_audit"]
    assert dag_report["task_type"] == "SparkSubmitOperator"
    assert dag_report["catchup"] is False
    assert dag_report["max_active_runs"] == 1
    assert "hourly" in dag_report["schedule"].lower() or "0 * * * *" in dag_report["schedule"]


def test_task_ships_the_job_and_the_library(dag_report: dict) -> None:
    from offsets_lib.job import package

    rendered = dag_report["rendered"]
    assert rendered["application"] == f"{RELEASE}/jobs/offsets_job.py"
    assert rendered["py_files"] == f"{RELEASE}/dist/offsets_lib.zip"
    assert rendered["files"] == f"{RELEASE}/conf/prod-example.toml"
    assert rendered["env_vars"] == {
        "OFFSETS_CONF_DIR": f"{RELEASE}/conf",
        "PYSPARK_PYTHON": f"./{package.ENVIRONMENT}/bin/python",  # the executors' only
    }
    assert rendered["name"] == "kafka-offsets-audit-20261121T090000"
    assert (ROOT / "jobs" / "offsets_job.py").is_file()
    assert (ROOT / "conf" / "prod-example.toml").is_file()


def test_task_arguments_are_templated(dag_report: dict) -> None:
    assert {"application", "py_files", "application_args"} <= set(dag_report["template_fields"])
    assert dag_report["raw"]["application_args"] == [
        "--conf",
        "prod-example.toml",
        "--as-of",
        "{{ data_interval_end.isoformat() }}",
        "--run-id",
        "{{ run_id }}",
    ]
    assert dag_report["rendered"]["application_args"] == [
        "--conf",
        "prod-example.toml",
        "--as-of",
        "2026-11-21T10:00:00+00:00",
        "--run-id",
        "scheduled__2026-11-21T09:00:00+00:00",
    ]


def test_a_deployment_names_its_profile_and_options(dag_report: dict) -> None:
    """OFFSETS_AUDIT_PROFILE names the profile shipped and read; OFFSETS_AUDIT_OPTIONS come
    after it, as flags that win over its values, split as a shell would."""
    configured = dag_report["configured"]
    assert configured["import_errors"] == {}
    command = configured["command"]
    assert command[command.index("--files") + 1] == f"{RELEASE}/conf/audit-eu.toml"
    app = command.index(f"{RELEASE}/jobs/offsets_job.py")
    assert command[app + 1 :] == [
        "--conf",
        "audit-eu.toml",
        "--output",
        "s3://audit eu/tables",
        "--kafka-option",
        "client.id=eu",
        "--as-of",
        "2026-11-21T10:00:00+00:00",
        "--run-id",
        "scheduled__2026-11-21T09:00:00+00:00",
    ]


def test_spark_submit_command_line(dag_report: dict) -> None:
    command = dag_report["command"]
    assert command[0] == "spark-submit"
    assert command[command.index("--py-files") + 1] == f"{RELEASE}/dist/offsets_lib.zip"
    assert command[command.index("--files") + 1] == f"{RELEASE}/conf/prod-example.toml"
    # the executors' Python: `make package`'s packed venv, unpacked where PYSPARK_PYTHON points
    archive = f"{RELEASE}/dist/executor-env.tar.gz#environment"
    assert command[command.index("--archives") + 1] == archive
    assert not any("shuffle.partitions" in part for part in command)  # the cluster's own
    app = command.index(f"{RELEASE}/jobs/offsets_job.py")
    assert command[app + 1 :] == [
        "--conf",
        "prod-example.toml",
        "--as-of",
        "2026-11-21T10:00:00+00:00",
        "--run-id",
        "scheduled__2026-11-21T09:00:00+00:00",
    ]


def test_a_prune_task_follows_the_run(dag_report: dict) -> None:
    """The run, then `offsets prune` with TABLES.md's retention for hourly runs, submitted
    like the run with the same profile (which says where the tables are), only after a run
    that succeeded."""
    assert dag_report["downstream"] == {
        "audit_offsets": ["prune_runs", "report_run"],
        "prune_runs": [],
        "report_run": [],
    }
    prune = dag_report["prune"]
    assert (prune["task_type"], prune["trigger_rule"]) == ("SparkSubmitOperator", "all_success")
    assert prune["rendered"]["application"] == f"{RELEASE}/jobs/prune_job.py"
    assert prune["rendered"]["name"] == "kafka-offsets-prune-20261121T090000"
    assert (ROOT / "jobs" / "prune_job.py").is_file()
    command = prune["command"]
    assert command[command.index("--files") + 1] == f"{RELEASE}/conf/prod-example.toml"
    assert (
        command[command.index("--packages") + 1]
        == dag_report["command"][dag_report["command"].index("--packages") + 1]
    )
    app = command.index(f"{RELEASE}/jobs/prune_job.py")
    assert command[app + 1 :] == [
        "--conf",
        "prod-example.toml",
        "--keep-for",
        "7d",
        "--keep-runs",
        "48",
    ]


def test_a_report_task_follows_the_run(dag_report: dict) -> None:
    """After a run that succeeded, `offsets report --next-to-tables` of the latest succeeded run
    (that one), submitted like the run with the same profile: its page goes next to the tables
    (_reports/)."""
    report = dag_report["report"]
    assert (report["task_type"], report["trigger_rule"]) == ("SparkSubmitOperator", "all_success")
    assert report["rendered"]["application"] == f"{RELEASE}/jobs/report_job.py"
    assert (ROOT / "jobs" / "report_job.py").is_file()
    command = report["command"]
    app = command.index(f"{RELEASE}/jobs/report_job.py")
    assert command[app + 1 :] == ["--conf", "prod-example.toml", "--next-to-tables"]
    configured = dag_report["configured"]["report"]["command"]
    app = configured.index(f"{RELEASE}/jobs/report_job.py")
    assert configured[app + 1 : app + 5] == [
        "--conf",
        "audit-eu.toml",
        "--output",
        "s3://audit eu/tables",
    ]


def test_report_job_accepts_the_dag_arguments(tmp_path: Path) -> None:
    """jobs/report_job.py runs `offsets report` (here on a folder without tables: exit 3)."""
    sys.path.insert(0, str(ROOT / "jobs"))
    try:
        import report_job
    finally:
        sys.path.remove(str(ROOT / "jobs"))
    assert report_job.main(["--output", str(tmp_path), "--next-to-tables"]) == 3


def test_a_deployment_prunes_where_its_options_put_the_tables(dag_report: dict) -> None:
    """OFFSETS_AUDIT_OPTIONS' --output reaches the prune task too (its Kafka options do not),
    and OFFSETS_AUDIT_RETENTION replaces the retention."""
    command = dag_report["configured"]["prune"]["command"]
    app = command.index(f"{RELEASE}/jobs/prune_job.py")
    assert command[app + 1 :] == [
        "--conf",
        "audit-eu.toml",
        "--output",
        "s3://audit eu/tables",
        "--keep-runs",
        "24",
    ]


def test_the_task_submits_what_a_plain_cluster_lacks(dag_report: dict) -> None:
    """Delta's, the Kafka connector's and S3A's packages for the installed pyspark, and Delta's
    SQL extension: a Spark cluster without them cannot run the shipped profile."""
    from offsets_lib.job.session import DELTA_CONF
    from offsets_lib.tools import jars

    command = dag_report["command"]
    assert command[command.index("--packages") + 1].split(",") == jars.submit_packages()
    confs = {command[i + 1] for i, arg in enumerate(command) if arg == "--conf"}
    assert {f"{k}={v}" for k, v in DELTA_CONF.items()} <= confs
    assert "spark.sql.session.timeZone=UTC" in confs


def test_job_accepts_the_dag_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """The arguments the DAG passes parse in the job (profile found via OFFSETS_CONF_DIR)."""
    from click.testing import CliRunner

    from offsets_lib.cli import main
    from offsets_lib.cli import run_command as cli_run
    from offsets_lib.job.options import UsageError

    seen = []

    def stop(kw: dict, *, now_ms: int):
        seen.append(real(kw, now_ms=now_ms))
        raise UsageError("stopped by the test")

    real = cli_run.run_options
    monkeypatch.setattr(cli_run, "run_options", stop)
    monkeypatch.chdir(tempfile.gettempdir())
    args = ["run", "--conf", "prod-example.toml", "--as-of", "2026-11-21T10:00:00+00:00"]
    args += ["--run-id", "scheduled__2026-11-21T09:00:00+00:00"]
    env = {"OFFSETS_CONF_DIR": str(ROOT / "conf"), "KAFKA_SASL_PASSWORD": "x"}
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2, result.output
    options = seen[0]
    assert options.source == "kafka"
    assert options.run_id == "scheduled__2026-11-21T09:00:00+00:00"
    assert options.as_of == 1_795_255_200_000
    assert options.kafka_options["security.protocol"] == "SASL_SSL"


def test_airflow_never_in_the_project_venv() -> None:
    from importlib import metadata

    names = {d.metadata["Name"].lower() for d in metadata.distributions() if d.metadata["Name"]}
    assert not names & {"apache-airflow", "pyspark-client", "apache-airflow-providers-apache-spark"}


def test_prune_job_accepts_the_dag_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The prune task's arguments parse in jobs/prune_job.py: the shipped profile (found via
    OFFSETS_CONF_DIR, no Kafka password in the environment) and a deployment's --output."""
    import importlib.util
    from datetime import UTC, datetime, timedelta

    from offsets_lib.io import sink

    spec = importlib.util.spec_from_file_location("prune_job", ROOT / "jobs" / "prune_job.py")
    prune_job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prune_job)
    now = datetime.now(UTC).replace(microsecond=0)
    for hours_ago, run_id in ((24 * 9, "old"), (1, "recent")):
        finished = now - timedelta(hours=hours_ago)
        row = {"run_id": run_id, "status": "succeeded", "finished_at": finished}
        sink.publish_run(row, output=str(tmp_path))
    monkeypatch.setenv("OFFSETS_CONF_DIR", str(ROOT / "conf"))
    monkeypatch.delenv("KAFKA_SASL_PASSWORD", raising=False)
    monkeypatch.chdir(tempfile.gettempdir())
    args = ["--conf", "prod-example.toml", "--output", str(tmp_path)]
    code = prune_job.main([*args, "--keep-for", "7d", "--keep-runs", "1", "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), out
    doc = json.loads(out)
    assert (doc["output"], doc["removed"], doc["kept"]) == (str(tmp_path), ["old"], ["recent"])


def command_block(command: list[str]) -> str:
    """The spark-submit line as docs/deploy.md shows it: each option with its value on a line
    of its own, the job script on one, shell-quoted."""
    application = command.index(f"{RELEASE}/jobs/offsets_job.py")
    groups = [[command[0]]]
    for i, part in enumerate(command[1:], 1):
        if part.startswith("--") or i == application:
            groups.append([part])
        else:
            groups[-1].append(part)
    line = " \\\n    ".join(shlex.join(group) for group in groups)
    return f"{BEGIN}\n```sh\n{line}\n```\n{END}"


def test_deploy_md_shows_the_line_the_dag_submits(dag_report: dict) -> None:
    regenerate = "PYTHONPATH=. .venv/bin/python tests/airflow/test_dag.py"
    assert command_block(dag_report["command"]) in DEPLOY_MD.read_text(), (
        f"docs/deploy.md is out of date: run `{regenerate}`"
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as home:
        block = command_block(build_dag_report(Path(home))["command"])
    text = DEPLOY_MD.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    DEPLOY_MD.write_text(text[:start] + block + text[end:])
    print(f"regenerated the spark-submit line of {DEPLOY_MD}")
