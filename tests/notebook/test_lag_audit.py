"""notebooks/lag_audit executes end to end on a freshly audited sample, and its two forms agree.

One small synthetic dump (`offsets generate`) is audited once by the real `offsets run` CLI
in-process (the session's `spark` fixture, no second JVM); then papermill executes
notebooks/lag_audit.ipynb on the project venv's own kernel (`python3`, the interpreter running
pytest), with the output folder passed as a parameter.
"""

from __future__ import annotations

import base64
from pathlib import Path

import jupytext
import nbformat
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_PY = ROOT / "notebooks" / "lag_audit.py"
NOTEBOOK_IPYNB = ROOT / "notebooks" / "lag_audit.ipynb"
PLOTS = ("lag_by_group", "expiry_timeline", "commit_rate")
RUN_ID = "notebook-sample"


def _cells(notebook: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in notebook.cells]


def test_py_and_ipynb_are_in_sync() -> None:
    """Regenerate with: cd notebooks && jupytext --update --to ipynb lag_audit.py."""
    from_py = jupytext.read(NOTEBOOK_PY)
    from_ipynb = nbformat.read(NOTEBOOK_IPYNB, as_version=4)
    assert _cells(from_py) == _cells(from_ipynb), (
        "run: cd notebooks && jupytext --update --to ipynb lag_audit.py"
    )
    assert from_ipynb.metadata["kernelspec"]["name"] == "python3"
    assert all(not c.get("outputs") for c in from_ipynb.cells), (
        "commit the notebook without outputs"
    )
    assert ["parameters"] in [tags for _, _, tags in _cells(from_ipynb)]


@pytest.fixture(scope="module")
def audited_sample(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny generated dump, audited once; returns the tables' root folder."""
    root = tmp_path_factory.mktemp("lag_audit")
    runner = CliRunner()
    dump, tables = str(root / "dump"), str(root / "tables")
    sizes = ["--groups", "20", "--records", "1500", "--seed", "11", "--partitions", "4"]
    generated = runner.invoke(main, ["generate", *sizes, "--out", dump])
    assert generated.exit_code == 0, generated.output
    run = ["run", "--source", "parquet", "--run-id", RUN_ID]
    audited = runner.invoke(main, [*run, "--input", dump, "--output", tables])
    assert audited.exit_code == 0, audited.output
    return root / "tables"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_notebook_executes_and_plots(audited_sample: Path, tmp_path: Path) -> None:
    import papermill

    figures = tmp_path / "figures"
    executed_path = tmp_path / "lag_audit.out.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK_IPYNB),
        str(executed_path),
        parameters={"output": str(audited_sample), "figures_dir": str(figures), "top_n": 10},
        kernel_name="python3",
        cwd=str(NOTEBOOK_IPYNB.parent),
        progress_bar=False,
        execution_timeout=300,
    )
    executed = nbformat.read(executed_path, as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == len(PLOTS)
    for png in pngs:
        assert base64.b64decode(png).startswith(b"\x89PNG")
    for name in PLOTS:
        assert (figures / f"{name}.png").stat().st_size > 5_000
    text = "\n".join(
        o.get("data", {}).get("text/markdown", "") + o.get("data", {}).get("text/plain", "")
        for o in outputs
    )
    assert f"Run **{RUN_ID}**" in text  # the latest successful run was picked
    assert "offsets expire within 24 h" in text
    assert "offsets expire within 7 days" in text
    assert "stale offsets in" in text
