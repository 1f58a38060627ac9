"""A session setting changed for a block is put back after it: the session's own value, or
unset when it had none (a recorded conf stands in for a session: no JVM)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from offsets_lib.io import spark_settings


class RecordedConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        del self.values[key]


@pytest.mark.parametrize("before", [{}, {"k": "mine"}])
def test_the_setting_holds_in_the_block_and_is_put_back(before: dict[str, str]) -> None:
    spark = SimpleNamespace(conf=RecordedConf(before))
    with spark_settings.setting(spark, "k", "v"):  # type: ignore[arg-type]
        assert spark.conf.values == {"k": "v"}
    assert spark.conf.values == before


def test_the_setting_is_put_back_when_the_block_fails() -> None:
    spark = SimpleNamespace(conf=RecordedConf({"k": "mine"}))
    with pytest.raises(RuntimeError), spark_settings.setting(spark, "k", "v"):  # type: ignore[arg-type]
        raise RuntimeError("job failed")
    assert spark.conf.values == {"k": "mine"}


class MeasuredCluster:
    """A cluster session as `parallelism` asks it: no parallelism set, a standalone master, and
    the small job's answer (a row per split of the range), which takes a while (executors
    starting). The job's function runs here, over one empty batch list per split."""

    def __init__(self, splits: int) -> None:
        self.conf = RecordedConf({"spark.master": "spark://127.0.0.1:7077"})
        self.splits = splits
        self.jobs = 0
        self.function = None

    def range(self, *args: int) -> MeasuredCluster:
        return self

    def mapInArrow(self, function, schema: object) -> MeasuredCluster:
        assert schema == spark_settings.SPLIT_ROWS
        self.function = function
        return self

    def collect(self) -> list[object]:
        self.jobs += 1
        time.sleep(0.2)
        return [row for _ in range(self.splits) for row in self.function(iter([]))]


def test_parallelism_asked_from_two_threads_at_once_is_measured_by_one_job() -> None:
    """The workers' start measures it in a thread while the driver plans; the plan's own ask
    waits for that measurement instead of running a second job."""
    spark = MeasuredCluster(splits=3)
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda _: spark_settings.parallelism(spark), range(2)))  # type: ignore[arg-type]
    assert (answers, spark.jobs) == ([3, 3], 1)


def test_the_measuring_job_imports_what_it_is_given() -> None:
    """The job that measures a cluster's parallelism is the workers' start: its tasks import
    the run's modules (a module that cannot be imported fails the job)."""
    spark = MeasuredCluster(splits=2)
    assert spark_settings.parallelism(spark, imports=("json",)) == 2  # type: ignore[arg-type]
    with pytest.raises(ModuleNotFoundError):
        spark_settings.parallelism(MeasuredCluster(splits=2), imports=("no_such_module_x",))  # type: ignore[arg-type]
