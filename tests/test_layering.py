"""The run path reads one way (issue 14 item 4; docs/runs.md, "How a run is
served"): servicer -> runs -> context -> llm -> runs. sidecar.llm is a pure
model boundary, so no module under it imports runs, context or servicers, not
even inside a function; and only the litellm route imports litellm."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sidecar

PACKAGE = Path(sidecar.__file__).parent
LLM = sorted((PACKAGE / "llm").rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function, absolute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_the_scan_sees_imports_at_every_depth() -> None:
    probe = PACKAGE / "llm" / "call.py"
    assert "sidecar.llm.faults" in imported_modules(probe)
    assert "sidecar.llm.via_litellm" in imported_modules(probe)  # imported inside a function


@pytest.mark.parametrize("path", LLM, ids=lambda p: p.name)
def test_llm_knows_nothing_of_runs_context_or_servicers(path: Path) -> None:
    upward = sorted(
        name
        for name in imported_modules(path)
        if name.split(".")[:2] in (["sidecar", "runs"], ["sidecar", "context"], ["sidecar", "servicers"])
    )
    assert upward == [], f"{path.relative_to(PACKAGE.parent)} imports {upward}"


def test_only_the_litellm_route_imports_litellm() -> None:
    importers = sorted(p.name for p in LLM if any(n.split(".")[0] == "litellm" for n in imported_modules(p)))
    assert importers == ["via_litellm.py"]


def test_runs_reach_the_models_only_through_the_gateway_and_its_types() -> None:
    """The run package calls down into sidecar.llm's public seams, never a transport."""
    allowed = {"coalesce", "faults", "gateway", "screen", "types"}  # (coalesce, screen: text on its way out)
    for path in sorted((PACKAGE / "runs").glob("*.py")):
        for name in imported_modules(path):
            parts = name.split(".")
            if parts[:2] == ["sidecar", "llm"] and len(parts) > 2:
                assert parts[2] in allowed, f"{path.name} imports {name}"


def test_a_prepared_run_does_not_reach_back_into_the_engine() -> None:
    """A rejected decision's retry is asked for by the run (sidecar.context.retry),
    not built by the prepared run calling the engine that made it."""
    imported = imported_modules(PACKAGE / "context" / "prepared.py")
    assert not any(name.startswith("sidecar.context.context_engine") for name in imported)
    assert not any(name.startswith("sidecar.context.retry") for name in imported)


def test_id_search_is_a_library_of_its_own() -> None:
    """sidecar.idsearch (issue 33 item 3) imports nothing from the rest of the sidecar, so
    the state checker and the projection can both use it without importing each other."""
    paths = sorted((PACKAGE / "idsearch").glob("*.py"))
    assert {p.name for p in paths} >= {"__init__.py", "backends.py", "fold.py", "match.py", "rule.py"}
    outside = sorted(
        f"{path.name}: {name}"
        for path in paths
        for name in imported_modules(path)
        if name.split(".")[0] == "sidecar" and name.split(".")[:2] != ["sidecar", "idsearch"]
    )
    assert outside == []


def test_state_does_not_reach_up_into_the_projection() -> None:
    """The projection reads state; state never imports the projection (the ID rule it
    needs, for the checker, is sidecar.idsearch's), so the two packages form no cycle."""
    upward = sorted(
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / "state").glob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[:2] == ["sidecar", "projection"]
    )
    assert upward == []


def test_the_process_contract_stands_alone() -> None:
    """sidecar/process_contract.py (issue 33 item 2) imports nothing else of the sidecar:
    the server and the client both import it, and neither pulls in the other with it."""
    path = PACKAGE / "process_contract.py"
    assert sorted(n for n in imported_modules(path) if n.split(".")[0] == "sidecar") == []


@pytest.mark.parametrize("literal", ['"sidecar-reason"', '"GAME_SIDECAR_MAGIC"', '"GAME_SIDECAR_TOKEN"',
                                     '"GAME_SIDECAR_CONFIG"', '"game-sidecar-v1"', '"authorization"'])
def test_the_contract_names_are_written_once(literal: str) -> None:
    """Each name of the process contract is spelled out in process_contract.py alone;
    everything else in the sidecar imports it from there."""
    spelled = sorted(
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "v1" not in path.relative_to(PACKAGE).parts and literal in path.read_text(encoding="utf-8")
    )
    assert spelled == ["sidecar/process_contract.py"]


def test_the_python_client_is_a_program_of_its_own() -> None:
    """sidecar/client/ (issue 33 item 1) imports nothing of the server: only its own
    modules, the process contract and the generated stubs. A game that imports the
    client loads no server code (before, it loaded lifecycle.py and host_watch.py)."""
    allowed = (["sidecar", "client"], ["sidecar", "process_contract"], ["sidecar", "v1"])
    outside = sorted(
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / "client").glob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "sidecar" and name != "sidecar" and name.split(".")[:2] not in allowed
    )
    assert outside == []


def test_the_python_client_is_entered_through_its_face() -> None:
    """Its modules are private: the rest of the sidecar imports `sidecar.client`."""
    private = sorted(
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if "client" not in path.relative_to(PACKAGE).parts[:1]
        for name in imported_modules(path)
        if name.startswith("sidecar.client._")
    )
    assert private == []
