"""Builders for context-engine tests: a real tokenizer and game-like sessions."""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from sidecar.config import Config
from sidecar.context import ContextEngine
from sidecar.context.contract import RunSpec
from sidecar.state.model import (
    Entity,
    Event,
    Field,
    LoreCard,
    Memory,
    Pad,
    PersonaBinding,
    PersonaTemplate,
    Session,
    Story,
)


@functools.cache
def tiktoken_counter():
    """cl100k_base through tiktoken, from the copy litellm ships (no network)."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin
    bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def count_messages(messages: list[dict[str, str]]) -> int:
    from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING

    count = tiktoken_counter()
    return sum(count(m["content"]) for m in messages) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING


def tavern_session(session_id: str = "s1") -> Session:
    """A small tavern scene with an NPC (Maerwyn, ID "npc-maerwyn-7"), a player, lore and memories."""
    s = Session(id=session_id)
    w = s.world
    for ent in [
        Entity(
            id="loc-tavern-01",
            kind="location",
            name="The Rusty Anchor",
            description="A smoky harbour tavern.",
            fields={"ambiance": Field("loud, smells of tar")},
        ),
        Entity(
            id="npc-maerwyn-7",
            kind="character",
            name="Maerwyn",
            description="A nomad merchant of fifty.",
            location_id="loc-tavern-01",
            fields={"hp": Field(30), "max_hp": Field(30), "role": Field("merchant")},
        ),
        Entity(
            id="player-one-1",
            kind="player",
            name="Aria",
            description="A young sellsword.",
            location_id="loc-tavern-01",
            fields={"hp": Field(12), "max_hp": Field(20)},
        ),
        Entity(id="item-key-0042", kind="item", name="rusty key", location_id="loc-tavern-01"),
        Entity(id="npc-guard-33", kind="character", name="Bored guard", location_id="loc-tavern-01"),
    ]:
        w.entities[ent.id] = ent
    w.events.append(Event(text="npc-guard-33 yawns loudly", actor_id="npc-guard-33", location_id="loc-tavern-01"))
    w.moods["npc-maerwyn-7"] = Pad(0.5, -0.2, 0.3)
    w.scene["time_of_day"] = "dusk"
    w.scene["weather"] = "rain"
    w.story = Story(plot_essentials="The king's seal was stolen.", story_summary="Aria arrived by ship.")
    w.lore["lore-dragon"] = LoreCard(
        id="lore-dragon",
        title="The Dragon",
        text="A red dragon sleeps under the hill.",
        triggers=["dragon", "red wyrm"],
    )
    w.lore["lore-seal"] = LoreCard(
        id="lore-seal", title="The Seal", text="The royal seal opens the vault.", triggers=["seal"]
    )
    w.memories.append(Memory(actor_id="npc-maerwyn-7", text="Aria paid twice for the silk.", revision=1))
    w.memories.append(Memory(actor_id="npc-maerwyn-7", text="The dragon burned my caravan.", revision=2))
    w.personas["npc-maerwyn-7"] = PersonaBinding(
        actor_id="npc-maerwyn-7",
        inline=PersonaTemplate(
            identity="You are {npcName}, a {role} in {location}.",
            inviolable_rules=["Never reveal the king's secret."],
            mood_modifiers={
                "calm": "You are calm, speaking slowly, without ceasing to be {npcName}.",
                "angry": "You are furious: short sentences, without ceasing to be {npcName}.",
            },
            reminder="You are still {npcName}, even when furious.",
        ),
    )
    return s


def engine(templates_dir: str = "", lore_dir: str = "") -> ContextEngine:
    cfg = Config()
    cfg.context.templates_dir = templates_dir
    cfg.context.lore_dir = lore_dir
    return ContextEngine(cfg)


def prepare(eng: ContextEngine, session: Session, spec: RunSpec, budget: int = 4000, **kw):
    return eng.prepare(session, spec, count_tokens=tiktoken_counter(), budget_tokens=budget, **kw)


def all_text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)
