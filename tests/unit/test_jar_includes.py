"""session.drop_jar_includes: the py-file includes Spark also loads as jars leave the Python
workers' path; a jar given only as --py-files stays (it may carry Python)."""

from __future__ import annotations

from types import SimpleNamespace

from offsets_lib.job import session


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


def _session(includes: list[str], jars: str | None) -> SimpleNamespace:
    conf = _Conf({} if jars is None else {"spark.jars": jars})
    return SimpleNamespace(sparkContext=SimpleNamespace(_python_includes=includes), conf=conf)


def test_the_packages_jars_leave_the_path_and_a_py_files_jar_stays() -> None:
    spark = _session(
        ["hadoop-aws-3.5.0.jar", "bundle-2.35.4.JAR", "udfs.jar", "offsets_lib.zip"],
        "file:///ivy/jars/hadoop-aws-3.5.0.jar,file:///ivy/jars/bundle-2.35.4.JAR",
    )
    session.drop_jar_includes(spark)
    assert spark.sparkContext._python_includes == ["udfs.jar", "offsets_lib.zip"]


def test_without_spark_jars_every_include_stays() -> None:
    spark = _session(["udfs.jar", "offsets_lib.zip"], None)
    session.drop_jar_includes(spark)
    assert spark.sparkContext._python_includes == ["udfs.jar", "offsets_lib.zip"]
