"""Run tracing (sidecar/runtrace.py), the benchmark's view of where a first token's
time goes: a Run through a real grpc.aio server and the sse transport to the fake
OpenAI-compatible server records every stage once, in the order a run reaches them;
with tracing off nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from sidecar import runtrace
from sidecar.config import Config, ModelProfile
from sidecar.v1 import agent_service_pb2 as apb

#: What the sidecar marks for one run on the sse transport, in the order it gets there.
STAGES = ["call", "parsed", "servicer", "submitted", "slot", "prompt", "send", "body", "headers",
          "first_line", "first_delta", "relayed", "emitted", "proto", "written"]


@pytest.fixture
def trace_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "trace.jsonl"
    runtrace.configure(str(path))
    try:
        yield path
    finally:
        runtrace.configure(None)


async def _run(make_server, monkeypatch: pytest.MonkeyPatch, run_ids: list[str]) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    async with FakeOpenAI(chunks=4, interval_s=0.001) as upstream:
        profile = ModelProfile(model="openai/ok", api_base=upstream.base_url, api_key_env="FAKE_OPENAI_KEY",
                               transport="sse", max_retries=0)
        running = await make_server(Config(profiles={"p": profile}, default_profile="p"))
        await running.client.open_session("g1")
        for run_id in run_ids:
            request = apb.RunRequest(session_id="g1", run_id=run_id, narrate=apb.NarrateInput(text="A bell rings."))
            kinds = [event.WhichOneof("kind") async for event in running.client.run(request)]
            assert kinds[-1] == "finished"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_traced_run_marks_every_stage_once_in_order(make_server, monkeypatch, trace_file: Path) -> None:
    await _run(make_server, monkeypatch, ["traced-1", "traced-2"])
    records = _records(trace_file)
    assert [r["run_id"] for r in records] == ["traced-1", "traced-2"]
    for record in records:
        marks = record["marks"]
        assert list(marks) == STAGES  # each stage once, reached in this order
        times = [marks[s] for s in STAGES]
        assert times == sorted(times)
        assert isinstance(record["gc"], list)


async def test_nothing_is_traced_when_off(make_server, monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "never.jsonl"
    runtrace.configure(str(path))
    runtrace.configure(None)
    await _run(make_server, monkeypatch, ["untraced"])
    assert _records(path) == []
    assert not runtrace.enabled()
