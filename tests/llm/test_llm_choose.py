"""How the embedded model chooses a decision's option (sidecar/llm/choose.py): what each
option is scored after, and, on the real default model, that the situation decides."""

from __future__ import annotations

import os

import pytest

from sidecar.llm.choose import choice_context, choose_option, option_words
from sidecar.llm.cpu_level import load_backends
from sidecar.llm.weights import find_local_model, resolve_weights


def test_an_option_is_scored_after_the_situation_alone() -> None:
    earlier = ["Event: The lamp flickers.", "Event: A dog barks.", "Mira says: \"Hello?\""]
    assert choice_context("Bram", "Situation: The cellar floods.", earlier) == (
        "You are Bram.\nSituation: The cellar floods.\n"
    )
    # No situation: the last two earlier lines say what the choice is about.
    assert choice_context("Bram", "", earlier) == 'You are Bram.\nEvent: A dog barks.\nMira says: "Hello?"\n'
    assert choice_context("", "", []) == ""


def test_an_option_reads_as_it_continues_the_cue() -> None:
    assert option_words("Open the hatch (target: Chief Oduya)") == " open the hatch."
    assert option_words("Pay the toll — with parameters: coins: a whole number from 1 to 5") == " pay the toll."


@pytest.fixture(scope="module")
def gemma():  # type: ignore[no-untyped-def]
    llama_cpp = pytest.importorskip("llama_cpp")
    status = find_local_model("", env={})
    if not status.weights_found:
        if os.environ.get("GAME_SIDECAR_REQUIRE_WEIGHTS"):
            pytest.fail(f"GAME_SIDECAR_REQUIRE_WEIGHTS is set, but {status.problem}")
        pytest.skip(f"needs the embedded model's weights: {status.problem}")
    load_backends()  # as the sidecar does first (a portable llama.cpp registers no backend itself)
    llm = llama_cpp.Llama(resolve_weights(status), n_ctx=512, n_threads=2, verbose=False)
    yield llm
    llm.close()


@pytest.mark.local_model
@pytest.mark.slow
def test_the_same_options_follow_the_situation(gemma) -> None:  # type: ignore[no-untyped-def]
    labels = ["Throw water on the fire", "Open the door for the guest", "Count the coins in the till"]
    fire = choose_option(gemma, "Bram", "Situation: The kitchen is on fire and smoke fills the inn.", [], labels)
    guest = choose_option(gemma, "Bram", "Situation: A guest knocks at the door and calls out.", [], labels)
    assert (fire, guest) == (0, 1)
    assert choose_option(gemma, "Bram", "Situation: anything", [], ["The only option"]) == 0
