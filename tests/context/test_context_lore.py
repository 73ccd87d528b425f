"""Lore cards: trigger window, ranking by recency and frequency, hysteresis, files, perspective."""

from __future__ import annotations

import json
import os

from ctxhelpers import all_text, engine, prepare
from world import World, anchor_tavern

from sidecar.context.context_index import context_index
from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.context.recall import rank_lore
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.state.model import Visibility

NPC = "npc-maerwyn-7"


def _rank(s, actions, window=4, previous=frozenset()):
    proj = Projection(s, NPC)
    return [c.id for c in rank_lore(context_index(s, index_for(s)), proj, actions, window, previous)]


def test_ranked_by_recency_and_frequency_within_the_window() -> None:
    s = anchor_tavern()
    World().lore("lore-wolf", "", "Wolves.", triggers=["wolf"]).onto(s)
    # Newest first: "seal" now, "wolf" three times before, "dragon" once, long ago.
    # Score = sum of 1/(1 + age): seal 1.0, wolf 1/2 + 1/3 + 1/4 = 1.08.
    actions = ["the seal", "a wolf", "another wolf", "wolf again", "the dragon"]
    assert _rank(s, actions, window=4) == ["lore-wolf", "lore-seal"]  # dragon is outside the window
    assert _rank(s, actions, window=5) == ["lore-wolf", "lore-seal", "lore-dragon"]
    assert _rank(s, ["a red wyrm!"]) == ["lore-dragon"]  # multi-word trigger
    assert _rank(s, ["red", "wyrm"]) == []  # words apart are not the phrase
    # A card the last prompt held stays while it matched within 4 windows, and ranks first.
    assert _rank(s, actions[:2] + ["x", "y"], window=4) == ["lore-seal", "lore-wolf"]  # recency wins
    assert _rank(s, actions, window=4, previous=frozenset({"lore-dragon"}))[0] == "lore-dragon"


def test_hidden_and_known_to_cards() -> None:
    s = anchor_tavern()
    s.world.lore["lore-dragon"].visibility = Visibility(level="hidden")
    s.world.lore["lore-seal"].visibility = Visibility(level="known_to", known_to=("someone-else",))
    p = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("The dragon and the seal?")))
    text = p.prompt.messages[0]["content"]
    assert "red dragon" not in text and "royal seal" not in text


def test_lore_files_are_loaded_and_reloaded(tmp_path) -> None:
    lore = tmp_path / "lore"
    lore.mkdir()
    (lore / "world.toml").write_text(
        '[[cards]]\nid = "kraken"\ntitle = "Kraken"\ntext = "A kraken guards the bay."\ntriggers = ["kraken"]\n'
    )
    eng = engine(lore_dir=str(lore))
    s = anchor_tavern()
    p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Is there a kraken?")))
    assert "A kraken guards the bay." in p.prompt.messages[0]["content"]
    (lore / "more.json").write_text(json.dumps([{"id": "eel", "text": "Giant eels.", "triggers": ["eel"]}]))
    eng.lore_files._checked = 0.0  # skip the one-second rescan pause
    p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("An eel, or a kraken?")))
    # The first prompt has a history (the guard's yawn) to protect: the new card waits after the line.
    assert "Giant eels." in p.prompt.messages[-1]["content"]
    assert "file:" not in all_text(p.prompt.messages)
    os.remove(lore / "world.toml")
    eng.lore_files._checked = 0.0
    p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Kraken?")))
    assert "kraken guards" not in all_text(p.prompt.messages)
