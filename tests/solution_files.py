"""The notebooks' solutions (notebooks/solutions/<name>.py) loaded for the tests: as written, or with a
student's slip planted by (old, new) text edits."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent.parent / "notebooks" / "solutions"


def source(name: str) -> str:
    return (SOLUTIONS / f"{name}.py").read_text()


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solution


def solution(name: str):
    return _load(SOLUTIONS / f"{name}.py")


def with_edits(name: str, edits, tmp_path: Path):
    """``name``'s solution with each (old, new) of ``edits`` replaced (every occurrence; each old must occur),
    loaded from a file of its own: a @triton.jit function reads its source from its file."""
    text = source(name)
    for old, new in edits:
        assert old in text, f"{name}'s solution has no {old!r}"
        text = text.replace(old, new)
    path = tmp_path / f"{name}_edited_{abs(hash(tuple(edits)))}.py"
    path.write_text(text)
    return _load(path)
