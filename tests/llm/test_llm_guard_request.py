"""The leak guard looks at the whole outgoing request, not only `messages`, on
both transports (litellm's and the sse reader), and the fake server's raw HTTP
bodies show what actually left: docs/privacy.md, "The leak guard"."""

from __future__ import annotations

import pytest
from fakes.openai_server import FakeOpenAI

from sidecar.errors import PrivacyLeakBlocked
from sidecar.llm import Limits, ModelRequest
from sidecar.llm.guard import check_request
from sidecar.runs.attempts import model_reply
from sidecar.runs.plan import fallback_chain
from sidecar.state.model import Moment

GOBLIN = "BP_Goblin_C_2147483647"
MESSAGES = [{"role": "system", "content": "Narrate."}, {"role": "user", "content": "The door opens."}]


async def _drain(gateway, limits: Limits, ids=frozenset({GOBLIN}), moment=None):
    """A run's reply loop (retries included) on profile "main"."""
    chain = fallback_chain(gateway, "main")
    await gateway.prepare_profile("main")
    async for _ in model_reply(gateway, chain, ModelRequest(chain[0], MESSAGES, limits, ids, moment)):
        pass


@pytest.mark.parametrize(
    "stop",
    [(GOBLIN,), ("END", f"when {GOBLIN} falls")],
    ids=["alone", "inside-text"],
)
async def test_an_engine_id_in_stop_sequences_is_never_sent(make_gateway, fake_openai: FakeOpenAI, stop) -> None:
    gw = make_gateway(main={"model": "ok", "max_retries": 2})
    with pytest.raises(PrivacyLeakBlocked) as err:
        await _drain(gw, Limits(stop=stop))
    assert err.value.metadata == {"field": "stop", "kind": "engine_id"}
    assert GOBLIN not in str(err.value)
    assert fake_openai.seen.bodies == []  # nothing left, and no retry was attempted


async def test_a_suppressed_tick_in_stop_sequences_is_never_sent(make_gateway, fake_openai: FakeOpenAI) -> None:
    gw = make_gateway(main={"model": "ok"})
    with pytest.raises(PrivacyLeakBlocked) as err:
        await _drain(gw, Limits(stop=("tick 48213377",)), ids=frozenset(), moment=Moment(tick=48213377))
    assert err.value.metadata == {"field": "stop", "kind": "moment"}
    assert fake_openai.seen.bodies == []


async def test_clean_stop_sequences_reach_the_raw_body(make_gateway, fake_openai: FakeOpenAI) -> None:
    gw = make_gateway(main={"model": "ok"})
    await _drain(gw, Limits(stop=("END", "npc_1:")))
    (raw,) = fake_openai.seen.bodies
    assert b'"END"' in raw and b'"npc_1:"' in raw and GOBLIN.encode() not in raw


def test_every_field_but_the_config_ones_is_searched() -> None:
    ids = frozenset({GOBLIN})
    for request in (
        {"messages": [], "user": GOBLIN},
        {"messages": [], "metadata": {"about": [f"x {GOBLIN}"]}},
        {"messages": [], "tools": [{"function": {"name": "f", "description": GOBLIN}}]},
        {"messages": [], "metadata": {GOBLIN: 1}},  # a key is text too
    ):
        with pytest.raises(PrivacyLeakBlocked):
            check_request(request, ids)
    # The model string, its base URL and key come from the sidecar's config, not the game;
    # numbers (token limits) are never game text.
    check_request(
        {"messages": [], "model": f"openai/{GOBLIN}", "api_key": GOBLIN, "max_tokens": 2147483647},
        ids | {"2147483647"},
    )


@pytest.mark.parametrize("ident", ["Grubnakarrowtooth", "2147483647", GOBLIN], ids=["letters", "digits", "mixed"])
@pytest.mark.parametrize("where", ["start", "end", "whole", "name"])
def test_an_id_at_a_messages_edge_is_found_by_the_one_pass_search(ident: str, where: str) -> None:
    """The guard searches all messages' texts joined; an ID touching a text's edge is
    still a whole token there, and the error still says which message held it."""
    content = {"start": f"{ident} waits.", "end": f"Here is {ident}", "whole": ident, "name": "Quiet."}[where]
    message = {"role": "user", "content": content, **({"name": ident} if where == "name" else {})}
    messages = [{"role": "system", "content": "Narrate the scene"}, message, {"role": "user", "content": "Go on"}]
    with pytest.raises(PrivacyLeakBlocked) as err:
        check_request({"messages": messages}, {ident})
    assert err.value.metadata["message_index"] == "1"


def test_texts_that_only_form_an_id_when_joined_pass() -> None:
    """Neighbouring messages never make an ID across their boundary, and an all-letter
    ID inside a longer word is no ID (sidecar.idsearch's edge rule), joined or not."""
    messages = [{"role": "user", "content": "Grubnakarrow"}, {"role": "user", "content": "tooth"},
                {"role": "user", "content": "The Grubnakarrowtoothish banner"}]
    check_request({"messages": messages}, {"Grubnakarrowtooth"})


def test_the_embedded_models_shape_and_sampling_are_not_game_text() -> None:
    """Their reprs hold only the project's words ("ReplyShape", "prose", "Sampling"): a game
    whose engine IDs are such words must still reach the embedded model."""
    from sidecar.llm.types import ReplyShape, Sampling

    body = {"messages": [], "reply_shape": ReplyShape("prose"), "sampling": Sampling()}
    check_request(body, {"prose", "ReplyShape", "Sampling", "kind"})
