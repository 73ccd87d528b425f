"""Issue 14 item 4: the stages of the pipeline get what they need as values; none of
them reaches back into the engine (sidecar/context/context_engine.py) for its caches."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import sidecar.context as context_pkg
from sidecar.context.layout import build_layout

STAGES = [
    "select",
    "recall",
    "timeline",
    "window",
    "layout",
    "input_parts",
    "budget",
    "fitted",
    "parts",
    "persona_slots",
    "selection_caches",
]


def _imports(module: str) -> set[str]:
    path = Path(context_pkg.__file__).parent / f"{module}.py"
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("module", STAGES)
def test_no_stage_imports_the_engine(module: str) -> None:
    assert "sidecar.context.context_engine" not in _imports(module)


def test_the_layout_builder_takes_no_engine() -> None:
    assert "engine" not in inspect.signature(build_layout).parameters
