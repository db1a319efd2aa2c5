"""The notebooks are committed without outputs and in sync with their py:percent twins
(``notebooks/*.py``, the reviewable form; `jupytext --sync notebooks/*.ipynb` refreshes them).
Executing them is nbmake's job: ``python -m pytest`` collects ``notebooks/*.ipynb`` too."""
from __future__ import annotations

import json
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                f"{path.name} is saved with outputs: clear them (jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_control_characters(path):
    """A backslash read as an escape ("\\rho" written in a plain string) leaves a control
    character where LaTeX was, and the formula does not render."""
    for cell in jupytext.read(path).cells:
        bad = sorted({hex(ord(c)) for c in cell.source if ord(c) < 0x20 and c not in "\n"})
        assert not bad, f"{path.name}: control characters {bad} in a cell starting {cell.source[:60]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_in_sync_with_percent_script(path):
    script = path.with_suffix(".py")
    assert script.exists(), f"{script.name} missing: jupytext --set-formats ipynb,py:percent {path}"
    a = [(c.cell_type, c.source.strip()) for c in jupytext.read(path).cells]
    b = [(c.cell_type, c.source.strip()) for c in jupytext.read(script).cells]
    assert a == b, f"{path.name} and {script.name} differ: jupytext --sync {path}"
