"""One client surface (issue 33 item 5): docs/protocol.md §3, "One client surface", names
every operation in each client. This reads the table, the C++ header, the C# source (as
text: this machine has no .NET) and `sidecar.client`, and fails when they drift: a name
in the table that a client lacks, a `—` where the client has grown the call, or a public
call of a client that the table does not name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import sidecar.client as api

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "protocol.md"
CPP_CLIENT = ROOT / "clients" / "cpp" / "include" / "game_sidecar" / "sidecar_client.h"
CPP_HEADERS = ROOT / "clients" / "cpp" / "include" / "game_sidecar"
CS_CLIENT = ROOT / "clients" / "unity" / "Runtime" / "Client"
ABSENT = "—"


def tables(heading: str) -> list[list[dict[str, str]]]:
    """The markdown tables under `heading` (up to the next heading), as rows of cells."""
    text = PROTOCOL.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n#", start + len(heading) + 2)
    found: list[list[dict[str, str]]] = []
    lines = text[start : end if end >= 0 else len(text)].splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            header = [c.strip() for c in lines[i].strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=True)))
                i += 1
            found.append(rows)
        i += 1
    return found


OPERATIONS, LAUNCH = tables("### One client surface")


def names(cell: str) -> list[str]:
    """The backticked names of a cell; [] for `—` (the client lacks it)."""
    return [] if cell.startswith(ABSENT) else re.findall(r"`([^`]+)`", cell)


def column(rows: list[dict[str, str]], client: str) -> list[str]:
    return [name for row in rows for name in names(row[client])]


# -- what each client declares -----------------------------------------------------
def python_calls() -> set[str]:
    """SidecarClient's public calls: its coroutines and async iterators."""
    return {
        name
        for name, member in vars(api.SidecarClient).items()
        if not name.startswith("_") and (inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member))
    } - {"close"}  # closes the channel: no operation (C++: the destructor; C#: Dispose)


def cpp_class_body(path: Path, name: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\nclass {name} {{")
    return text[start : text.index("\n};", start)]


def cpp_calls() -> set[str]:
    """The public member functions of game_sidecar::SidecarClient, blocking forms (a
    `<Name>Async(CallQueue&, …)` twin is checked apart), with TrackedSession::Open."""
    body = cpp_class_body(CPP_CLIENT, "SidecarClient").split("\n private:")[0]
    declared = set(re.findall(r"^\s+(?:static\s+)?[\w:<>,\s*&]+?[\s*&](\w+)\(", body, re.MULTILINE))
    plumbing = {"SidecarClient", "endpoint", "WaitForConnected"}
    calls = {n for n in declared - plumbing if not n.endswith("Async") and not n.startswith("operator")}
    tracked = cpp_class_body(CPP_HEADERS / "tracked_session.h", "TrackedSession")
    if re.search(r"static\s+std::unique_ptr<TrackedSession>\s+Open\(", tracked):
        calls.add("TrackedSession::Open")
    return calls


def cpp_async_twins() -> set[str]:
    body = cpp_class_body(CPP_CLIENT, "SidecarClient")
    return set(re.findall(r"CallHandle\s+(\w+)Async\(CallQueue&", body))


def cs_calls() -> set[str]:
    """The public methods of GameSidecar.SidecarClient, read from its source."""
    text = (CS_CLIENT / "SidecarClient.cs").read_text(encoding="utf-8")
    method = r"^\s+public\s+(?:static\s+)?(?:async\s+)?[\w<>?,.\[\]\s]+?\s(\w+)\("
    declared = set(re.findall(method, text, re.MULTILINE))
    plumbing = {"SidecarClient", "Options", "Dispose", "NewId"}
    return declared - plumbing


# -- the checks ----------------------------------------------------------------------
def test_the_table_is_read() -> None:
    assert len(OPERATIONS) >= 18 and {"GetInfo", "Run", "ReadTranscript"} <= {r["operation"] for r in OPERATIONS}
    assert "kSpawnFailed" in column(LAUNCH, "C++ (`LaunchError::Kind`)")


@pytest.mark.parametrize(
    ("client", "declared"), [("Python", python_calls), ("C++", cpp_calls), ("C#", cs_calls)], ids=["py", "cpp", "cs"]
)
def test_every_call_a_client_has_is_in_the_table_and_no_other(client: str, declared) -> None:  # type: ignore[no-untyped-def]
    named = column(OPERATIONS, client)
    assert len(named) == len(set(named)), f"{client}: a name is in the table twice"
    assert sorted(declared()) == sorted(named)


def test_a_dash_is_a_call_the_client_lacks() -> None:
    """`—` must stay true: a client that grows the call (its Python name in the client's
    casing, e.g. `continue_story` as `ContinueStory` or `ContinueStoryAsync`) fails here
    until the table names it."""
    declared = {"Python": python_calls(), "C++": cpp_calls(), "C#": cs_calls()}
    dashes = 0
    for row in OPERATIONS:
        for python_name in names(row["Python"]):
            camel = "".join(part.title() for part in python_name.split("_"))
            for client, calls in declared.items():
                if row[client].startswith(ABSENT):
                    dashes += 1
                    assert not calls & {camel, f"{camel}Async"}, f"{client} has {camel} now: name it in the table"
    assert dashes >= 3  # C++'s narrate, continue and decide, today


def test_every_unary_cpp_call_has_its_non_blocking_twin() -> None:
    streaming = {"StreamDeltas", "Run", "StartRun", "TrackedSession::Open"}
    assert cpp_calls() - streaming <= cpp_async_twins()


def test_every_reason_the_table_names_is_a_reason_of_the_protocol() -> None:
    from sidecar.v1 import errors_pb2

    known = set(errors_pb2.ErrorReason.keys())
    for row in OPERATIONS:
        for reason in names(row["its own errors (reasons)"]):
            if re.fullmatch(r"[A-Z_]+", reason):
                assert f"ERROR_REASON_{reason}" in known, reason
            elif reason.endswith("_*"):  # a family, e.g. PROVIDER_*
                assert any(k.startswith(f"ERROR_REASON_{reason[:-1]}") for k in known), reason


def test_the_launch_errors_are_the_ones_each_client_declares() -> None:
    python = [n.split(".")[0] for n in column(LAUNCH, "Python")]
    assert all(hasattr(api, n) for n in python), python
    header = (CPP_HEADERS / "sidecar_process.h").read_text(encoding="utf-8")
    for name in column(LAUNCH, "C++ (`LaunchError::Kind`)"):
        assert re.search(rf"\b{re.escape(name.split('::')[-1])}\b", header), name
    source = "\n".join(p.read_text(encoding="utf-8") for p in sorted(CS_CLIENT.glob("*.cs")))
    for name in column(LAUNCH, "C#"):
        member = name.split(".")[-1]
        assert re.search(rf"(class|Task<\w+>)\s+{re.escape(member)}\b", source), name


def test_retryable_reasons_are_read_from_the_protos() -> None:
    """Declared once, `[(retryable) = true]` in errors.proto; the Python client reads them
    from the descriptors, the C++ client too (clients/cpp/src/status.cpp), and the docs'
    list (§4, "Retryable") names the same set. C#'s IsRetryableReason still lists them by
    hand: a change for the machine with .NET."""
    from sidecar.v1 import errors_pb2

    proto = (ROOT / "proto" / "sidecar" / "v1" / "errors.proto").read_text(encoding="utf-8")
    marked = set(re.findall(r"ERROR_REASON_(\w+) = \d+ \[\(retryable\) = true\];", proto))
    assert marked == set(api.RETRYABLE_REASONS) == {
        "QUEUE_FULL", "PROVIDER_TIMEOUT", "PROVIDER_RATE_LIMITED", "PROVIDER_UNAVAILABLE", "STORAGE_FULL"
    }
    assert errors_pb2.ErrorReason.DESCRIPTOR.values_by_name["ERROR_REASON_QUEUE_FULL"].GetOptions().Extensions[
        errors_pb2.retryable]
    docs = PROTOCOL.read_text(encoding="utf-8")
    paragraph = docs[docs.index("**Retryable**") : docs.index("\n\n", docs.index("**Retryable**"))]
    listed = set(re.findall(r"`([A-Z_]+)`", paragraph.split("; for `SIDECAR_GONE`")[0]))
    assert listed == marked
    status_cpp = (ROOT / "clients" / "cpp" / "src" / "status.cpp").read_text(encoding="utf-8")
    assert "GetExtension(sidecar::v1::retryable)" in status_cpp
    assert not any(f'"{reason}"' in status_cpp for reason in marked)
