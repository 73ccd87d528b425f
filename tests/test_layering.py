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


def import_base(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a `from ... import` names (`package`: the importer's package)."""
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    return base


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function, absolute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = import_base(node, package)
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


# -- the whole house (issue 33 item 4) ----------------------------------------------
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "v1" not in p.relative_to(PACKAGE).parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SOURCES}


def _under_type_checking(tree: ast.AST) -> set[int]:
    """The nodes an `if TYPE_CHECKING:` guards: they never run, so they close no circle."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return guarded


def import_edges(path: Path) -> set[str]:
    """The sidecar modules `path` runs an import of, at the top or inside a function:
    `from pkg import name` is an edge to the module `pkg.name` when there is one, else
    to `pkg` (its face)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    guarded = _under_type_checking(tree)
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = import_base(node, package)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                edges.add(target if target in MODULES else base)
    return {edge for edge in edges if edge in MODULES and edge != name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_the_cycle_check_finds_a_circle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_sidecar_is_in_an_import_circle() -> None:
    """No circle among the sidecar's modules, counting imports made inside functions
    (they run too, only later) and an import of a package's face; imports under
    `if TYPE_CHECKING:` never run and are left out."""
    graph = {name: import_edges(path) for name, path in MODULES.items()}
    assert import_cycles(graph) == []


def _defined_names(path: Path) -> set[str]:
    """What a module defines at its top level (not what it imports)."""
    names: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for stmt in tree.body:
        for node in [stmt, *(stmt.body + stmt.orelse if isinstance(stmt, (ast.If, ast.Try)) else [])]:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


DEFINED = {name: _defined_names(path) for name, path in MODULES.items()}
ROOT = PACKAGE.parent
IMPORTERS = sorted([*SOURCES, *(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")])


def misdirected_imports(source: str, label: str, inside: str = "") -> list[str]:
    """Each `from sidecar.X import n` in `source` that names neither the module defining
    `n` nor, from outside X's package, the package's face. `inside`: the importing
    module's name when it is one of the sidecar's."""
    wrong: list[str] = []
    for node in ast.walk(ast.parse(source, filename=label)):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module not in MODULES:
            continue
        base = node.module
        face = MODULES[base].name == "__init__.py"
        for alias in node.names:
            if f"{base}.{alias.name}" in MODULES or alias.name in DEFINED[base]:
                continue
            if face and not (inside == base or inside.startswith(base + ".")):
                continue
            wrong.append(f"{label}:{node.lineno}: from {base} import {alias.name}")
    return wrong


def test_the_path_check_tells_a_definer_from_a_re_export() -> None:
    source = ("from sidecar.process_contract import Handshake\n"  # its definer
              "from sidecar.client import SidecarProcess\n"  # a face, from outside
              "from sidecar.client._client import TrackedSession\n"  # imported there, defined elsewhere
              "from sidecar.client import SidecarClient\n")  # a face, from inside its package
    assert misdirected_imports(source, "probe") == ["probe:3: from sidecar.client._client import TrackedSession"]
    assert misdirected_imports(source, "probe", inside="sidecar.client._supervisor") == [
        "probe:2: from sidecar.client import SidecarProcess",
        "probe:3: from sidecar.client._client import TrackedSession",
        "probe:4: from sidecar.client import SidecarClient",
    ]


def test_every_name_is_imported_from_where_it_is_defined_or_from_a_face() -> None:
    """One path per name: code imports a name from the module that defines it, or,
    from outside a package, from the package's face. A module that re-exports what it
    imported (a split hidden behind the old name) gives a name a second path."""
    wrong = [
        line
        for path in IMPORTERS
        for line in misdirected_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)),
                                        module_name(path) if path.is_relative_to(PACKAGE) else "")
    ]
    assert wrong == []
