"""Hypothesis strategies for the leak property tests: random worlds whose engine
IDs are distinctive strings (GUIDs, Unreal blueprint names, asset paths with
slashes, Cyrillic), so a plain substring search finds any that leaks, and whose
game-supplied text (names, descriptions, tags, field values, events, lore,
inputs) is full of those IDs. Each world is built with tests/world.py's `World`."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st
from world import World

from sidecar.state import ops as o
from sidecar.state.model import (
    Entity,
    EntityRef,
    Event,
    Field,
    LoreCard,
    Memory,
    Moment,
    MomentExposure,
    Pad,
    PersonaBinding,
    PersonaTemplate,
    Relation,
    Session,
    SessionOptions,
    Vec3,
    Visibility,
)

KINDS = ["character", "location", "item", "faction", "player", "other"]
NAMES = ["Grub", "Ana", "Tavern", "Old Mill", "Sword of Dawn", "Guard", "Guard", "Mira", ""]
WORDS = ["the", "goblin", "walks", "to", "and", "sees", "gold", "12", "option 1", "a", "door"]

guid = st.uuids().map(str)
blueprint = st.tuples(st.sampled_from(["Goblin", "Orc", "Chest", "Door"]), st.integers(10**6, 2**31 - 1)).map(
    lambda t: f"BP_{t[0]}_C_{t[1]}"
)
path = st.lists(st.text("abcdefghXYZ", min_size=2, max_size=5), min_size=1, max_size=3).map(
    lambda parts: "/Game/" + "/".join(parts) + ".uasset"
)
cyrillic = st.text(st.characters(min_codepoint=0x430, max_codepoint=0x44F), min_size=3, max_size=6).map(
    lambda t: f"ид-{t}-№"
)
engine_id = st.one_of(guid, blueprint, path, cyrillic)


@dataclass
class Case:
    session: Session
    actor_id: str
    named: list[str]
    moment: Moment
    input_text: str
    #: Values that are in the world only behind hidden visibility.
    hidden_values: list[str]


# The bulk of each world (texts, values, visibilities) comes from one seeded Random
# drawn through hypothesis: reproducible, and ~50x cheaper to generate than one
# hypothesis draw per word; the structure (IDs, counts, options) stays shrinkable.


def _secret(rnd: random.Random) -> str:
    """Hidden values are marked, so a test can tell they never leak."""
    return f"SECRET-{rnd.randrange(10**9):09d}"


def _visibility(rnd: random.Random, ids: list[str]) -> Visibility:
    level = rnd.choice(["public", "public", "public", "known_to", "private", "hidden"])
    if level == "known_to":
        return Visibility("known_to", tuple(rnd.sample(ids, rnd.randint(0, min(3, len(ids))))))
    return Visibility(level)  # type: ignore[arg-type]


def _text(rnd: random.Random, ids: list[str]) -> str:
    parts = [rnd.choice(WORDS) if rnd.random() < 0.6 else rnd.choice(ids) for _ in range(rnd.randint(0, 8))]
    return rnd.choice([" ", ", ", "/", "_", ":", ""]).join(parts)


def _value(rnd: random.Random, ids: list[str]):
    kind = rnd.choice(["int", "bool", "float", "ref", "vec", "text", "list"])
    if kind == "int":
        return rnd.randint(-5, 500)
    if kind == "bool":
        return rnd.random() < 0.5
    if kind == "float":
        return rnd.uniform(-10, 10)
    if kind == "ref":
        return EntityRef(rnd.choice(ids))
    if kind == "vec":
        return Vec3(rnd.uniform(-9, 9), rnd.uniform(-9, 9), rnd.uniform(-9, 9))
    if kind == "text":
        return _text(rnd, ids)
    return [EntityRef(rnd.choice(ids)) for _ in range(rnd.randint(0, 3))]


@st.composite
def cases(draw, ids_from: st.SearchStrategy[str] = engine_id) -> Case:
    """`ids_from`: the engine IDs' strategy (distinctive ones by default)."""
    ids = draw(st.lists(ids_from, min_size=2, max_size=12, unique=True))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    options = SessionOptions(
        alias_mode=draw(st.sampled_from(["kind", "display_name"])),
        expose_moment=MomentExposure(*(draw(st.booleans()) for _ in range(3))),
        coordinate_fields=["pos", "cell"],
        exposed_coordinate_fields=draw(st.lists(st.sampled_from(["pos", "cell"]), unique=True)),
    )
    session_id = draw(guid)
    hidden_values: list[str] = []
    entities = []
    for eid in ids:
        vis = _visibility(rnd, ids)
        fields: dict[str, Field] = {}
        for fname in rnd.sample(["hp", "pos", "cell", "owner", "note", "mood"], rnd.randint(0, 4)):
            fvis = None if rnd.random() < 0.5 else _visibility(rnd, ids)
            if fvis is not None and fvis.level == "hidden":
                value = _secret(rnd)
                hidden_values.append(value)
            else:
                value = _value(rnd, ids)
            fields[fname] = Field(value, fvis)
        name = rnd.choice([rnd.choice(NAMES), rnd.choice(ids), f"Sir {rnd.choice(ids)}"])
        if vis.level == "hidden":
            name = _secret(rnd)
            hidden_values.append(name)
        entities.append(
            Entity(
                id=eid,
                kind=rnd.choice(KINDS),  # type: ignore[arg-type]
                name=name,
                description=_text(rnd, ids) if vis.level != "hidden" else "",
                tags=[_text(rnd, ids) for _ in range(rnd.randint(0, 2))],
                fields=fields,
                location_id=rnd.choice(["", rnd.choice(ids), rnd.choice(ids)]),
                visibility=vis,
            )
        )
    extra: list[o.Op] = []

    def text_for(vis: Visibility) -> str:
        if vis.level != "hidden":
            return _text(rnd, ids)
        hidden_values.append(_secret(rnd))
        return hidden_values[-1]

    for _ in range(draw(st.integers(0, 4))):
        vis = _visibility(rnd, ids)
        extra.append(
            o.RecordEvent(
                Event(
                    text=text_for(vis),
                    entity_ids=rnd.sample(ids, rnd.randint(0, min(3, len(ids)))),
                    actor_id=rnd.choice(["", rnd.choice(ids)]),
                    location_id=rnd.choice(["", rnd.choice(ids)]),
                    visibility=vis,
                )
            )
        )
    for _ in range(draw(st.integers(0, 3))):
        vis = _visibility(rnd, ids)
        extra.append(
            o.SetRelation(Relation(rnd.choice(ids), rnd.choice(ids), text_for(vis) or "knows", visibility=vis))
        )
    for lore_id in draw(st.lists(ids_from, max_size=2, unique=True)):
        if lore_id not in ids:
            vis = _visibility(rnd, ids)
            card = LoreCard(id=lore_id, title=text_for(vis), text=text_for(vis), visibility=vis)
            extra.append(o.UpsertLoreCard(card))
    if draw(st.booleans()):
        extra.append(o.SetSceneFact(key="weather", value=_value(rnd, ids)))
    # What only the context engine renders: story, memories, moods, personas.
    if draw(st.booleans()):
        extra.append(
            o.SetStory(
                plot_essentials=_text(rnd, ids),
                author_note=_text(rnd, ids),
                story_summary=_text(rnd, ids),
                instructions=_text(rnd, ids),
            )
        )
    for _ in range(draw(st.integers(0, 3))):
        extra.append(o.RecordMemory(Memory(actor_id=rnd.choice(ids), text=_text(rnd, ids))))
    pool = ids
    for actor in rnd.sample(ids, rnd.randint(0, 2)):
        extra.append(o.SetMood(actor, Pad(rnd.uniform(-1, 1), rnd.uniform(-1, 1), rnd.uniform(-1, 1))))
        template = PersonaTemplate(
            identity=f"You are {{npcName}} of {{location}}, {_text(rnd, pool)}",
            inviolable_rules=[_text(rnd, pool), "Never name {secret}."],
            mood_modifiers={"calm": _text(rnd, pool), "angry": _text(rnd, pool)},
            reminder=_text(rnd, pool),
        )
        slots = {"secret": _text(rnd, ids), "npcName": rnd.choice(["", rnd.choice(ids)])}
        extra.append(o.SetPersona(PersonaBinding(actor_id=actor, inline=template, slots=slots)))
    # As a game sends it: the entities in one delta, the rest in the next.
    s = World().entities(*entities).then().add(*extra).session(session_id, options)
    return Case(
        session=s,
        actor_id=draw(st.one_of(st.just(""), st.sampled_from(ids))),
        named=draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)),
        moment=Moment(
            timeline=f"timeline-{draw(guid)}",
            tick=draw(st.integers(10**6, 2**62)),
            calendar=f"Day {draw(st.integers(1000, 9999))} of Frostmonth",
        ),
        input_text=_text(rnd, ids),
        hidden_values=hidden_values,
    )


def all_engine_ids(s: Session) -> set[str]:
    return set(s.aliases.by_id) | set(s.world.lore)


def hidden_actor(case: Case) -> bool:
    """A hidden actor gets no prompt (InvalidRequest); the tests check that and stop."""
    return bool(case.actor_id) and case.session.world.entities[case.actor_id].visibility.level == "hidden"
