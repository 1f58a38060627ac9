"""A session setting changed for a block is put back after it: the session's own value, or
unset when it had none (a recorded conf stands in for a session: no JVM)."""

from __future__ import annotations

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
