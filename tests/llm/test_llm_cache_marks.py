"""Provider prompt caching for providers that cache only when asked (issue 23,
item 8): an Anthropic model through litellm gets `cache_control` at the end of
the prompt's stable prefix (checked in the request as recorded by a fake
Anthropic server), and the cached tokens it reports reach Usage."""

from __future__ import annotations

import pytest
from fakes.anthropic_server import FakeAnthropic

from sidecar.config import Config, ModelProfile
from sidecar.llm import Limits, ModelGateway, ModelRequest
from sidecar.llm.cache_marks import mark_stable_prefix
from sidecar.llm.routes import resolve
from sidecar.llm.types import Completion, TextPiece
from sidecar.runs.attempts import model_reply
from sidecar.runs.plan import fallback_chain

MESSAGES = [
    {"role": "system", "content": "You are npc_1, a merchant."},
    {"role": "user", "content": 'player_1 says: "Any lamps?"'},
    {"role": "assistant", "content": "Two, brass."},
    {"role": "user", "content": "## Scene\nDusk.\n## Input\nAnswer as npc_1."},
]
MARK = {"type": "ephemeral"}


async def reply_of(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, **profile: str) -> Completion:
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "sk-ant-fake")
    fields = {"model": "anthropic/claude-3-5-haiku-20241022", "api_base": server.base_url}
    fields.update(profile)
    main = ModelProfile(**fields, api_key_env="FAKE_ANTHROPIC_KEY", max_retries=0)  # type: ignore[arg-type]
    gateway = ModelGateway(Config(profiles={"main": main}, default_profile="main"))
    gateway.start()
    try:
        chain = fallback_chain(gateway, "main")
        await gateway.prepare_profile("main")
        done = None
        text = ""
        async for piece in model_reply(gateway, chain, ModelRequest(chain[0], MESSAGES, Limits())):
            if isinstance(piece, TextPiece):
                text += piece.text
            elif isinstance(piece, Completion):
                done = piece
        assert text.strip() == server.reply and done is not None
        return done
    finally:
        await gateway.aclose()


async def test_an_anthropic_request_marks_the_end_of_the_stable_prefix(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    async with FakeAnthropic(input_tokens=40, cache_read=1200) as server:
        done = await reply_of(server, monkeypatch)
        (sent,) = server.requests()
    # The system message (its own field at Anthropic) ends on a breakpoint...
    system = sent["system"]
    assert isinstance(system, list) and system[-1]["cache_control"] == MARK
    assert system[-1]["text"] == MESSAGES[0]["content"]
    # ...and so does the history's last turn, the end of the stable prefix; the volatile
    # final message (scene, input) does not.
    *history, final = sent["messages"]
    marked = [i for i, m in enumerate(history) for b in m["content"] if isinstance(b, dict) and "cache_control" in b]
    assert marked == [len(history) - 1] and history[-1]["role"] == "assistant"
    assert "cache_control" not in str(final)
    assert (done.prompt_tokens, done.cached_tokens) == (1240, 1200)  # litellm counts the cached ones in


async def test_prompt_cache_off_sends_no_mark(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    async with FakeAnthropic() as server:
        await reply_of(server, monkeypatch, prompt_cache="off")
        assert b"cache_control" not in server.bodies[0]


@pytest.mark.parametrize(
    ("model", "transport", "setting", "marked"),
    [
        ("anthropic/claude-3-5-haiku-20241022", "auto", "auto", True),
        ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "auto", "auto", True),
        ("vertex_ai/claude-3-5-sonnet@20240620", "auto", "auto", True),
        ("openai/gpt-4o-mini", "litellm", "auto", False),  # OpenAI caches on its own
        ("gemini/gemini-1.5-flash", "auto", "mark", True),
        ("anthropic/claude-3-5-haiku-20241022", "auto", "off", False),
        ("openai/gpt-4o-mini", "sse", "mark", False),  # only litellm routes mark
    ],
)
def test_which_profiles_mark(model: str, transport: str, setting: str, marked: bool) -> None:
    profile = ModelProfile(model=model, transport=transport, prompt_cache=setting)  # type: ignore[arg-type]
    assert resolve(profile).mark_cache is marked


def test_marking_copies_and_leaves_the_prompt_alone() -> None:
    out = mark_stable_prefix(MESSAGES)
    assert [i for i, m in enumerate(out) if not isinstance(m["content"], str)] == [0, 2]
    assert all(isinstance(m["content"], str) for m in MESSAGES)  # shared with the prompt cache
    assert mark_stable_prefix(MESSAGES[:1]) == MESSAGES[:1]


@pytest.mark.slow
async def test_a_run_over_grpc_marks_the_prefix_and_reports_cached_tokens(make_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from world import World

    from sidecar.v1 import agent_service_pb2 as apb

    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "sk-ant-fake")
    async with FakeAnthropic(input_tokens=30, cache_read=900) as server:
        claude = ModelProfile(
            model="anthropic/claude-3-5-haiku-20241022", api_base=server.base_url, api_key_env="FAKE_ANTHROPIC_KEY"
        )
        running = await make_server(Config(profiles={"claude": claude}, default_profile="claude"))
        client = running.client
        await client.open_session("g")
        world = World().entity("inn", "location", "Inn").entity("npc", name="Maerwyn", at="inn")
        await world.entity("pc", "player", "Aren", at="inn").send(client, "g", 0)
        usage = []
        for line in ("Any lamps?", "How much?"):
            request = apb.RunRequest(
                session_id="g", actor_id="npc", dialogue=apb.DialogueInput(speaker_id="pc", text=line)
            )
            usage += [e.usage async for e in client.run(request, timeout=60) if e.WhichOneof("kind") == "usage"]
        assert [u.cached_tokens for u in usage] == [900, 900]
        second = server.requests()[1]
        *history, final = second["messages"]
        assert second["system"][-1]["cache_control"] == MARK
        assert history[-1]["content"][-1]["cache_control"] == MARK and "cache_control" not in str(final)
        assert "Any lamps?" in str(history)  # the first turn is in the cached prefix
