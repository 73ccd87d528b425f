"""The typed seams stay typed (issue 14 item 2).

`mypy sidecar` is strict through pyproject.toml and a step of scripts/test; the
fast tests here keep that wiring and the rules around it (every `type: ignore`
left in sidecar/ names its error code and says why; the client's keyword
arguments are the proto's fields), and the slow one runs the checker itself so
`pytest -m slow` alone also catches a type error.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sidecar.client import RunFields, SessionOptionFields
from sidecar.v1 import agent_service_pb2 as agent_pb
from sidecar.v1 import session_service_pb2 as session_pb

ROOT = Path(__file__).resolve().parents[1]
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[a-z-]+(?:,\s*[a-z-]+)*\])?(?P<rest>.*)$")


def test_mypy_is_strict_on_sidecar_and_scripts_test_runs_it() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert config.get("warn_unused_ignores", True) is True  # an ignore typing made unnecessary fails the step
    steps = [line.strip() for line in (ROOT / "scripts" / "test").read_text().splitlines()]
    assert ".venv/bin/mypy sidecar" in steps


def test_every_type_ignore_in_sidecar_names_its_code_and_says_why() -> None:
    bad: list[str] = []
    for path in sorted((ROOT / "sidecar").rglob("*.py")):
        if "v1" in path.relative_to(ROOT / "sidecar").parts:
            continue  # generated
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = _IGNORE.search(line)
            if m is None:
                continue
            why_here = m["rest"].strip().startswith("#")
            why_above = i > 0 and lines[i - 1].strip().startswith("#")
            if not m["codes"] or not (why_here or why_above):
                bad.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
    rule = "a type: ignore needs [its-code] and a why-comment (same line or the line above)"
    assert not bad, rule + ":\n" + "\n".join(bad)


def test_the_rule_above_catches_a_bare_ignore() -> None:
    bare = _IGNORE.search("x = f()  # type: ignore")
    assert bare is not None and bare["codes"] is None
    m = _IGNORE.search("class A(B):  # type: ignore[misc]  # B is Any")
    assert m is not None and m["codes"] == "[misc]" and m["rest"].strip().startswith("#")


def test_open_session_takes_exactly_the_session_options_fields() -> None:
    assert set(SessionOptionFields.__annotations__) == set(session_pb.SessionOptions.DESCRIPTOR.fields_by_name)
    assert not SessionOptionFields.__required_keys__


def test_narrate_takes_the_run_request_fields_besides_session_actor_and_input() -> None:
    request = agent_pb.RunRequest.DESCRIPTOR
    inputs = {f.name for f in request.oneofs_by_name["input"].fields}
    assert set(RunFields.__annotations__) == set(request.fields_by_name) - {"session_id", "actor_id"} - inputs
    assert not RunFields.__required_keys__


@pytest.mark.slow
@pytest.mark.timeout(900)  # a cold cache on a busy machine takes minutes; a warm one seconds
def test_mypy_on_sidecar_finds_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "sidecar"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
