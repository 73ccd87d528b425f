"""The benchmark scenes of `scenes/*.json` (format: scenes/README.md): loading, the shape
rules, and who perceives what (the figure `names_right_ratio` needs that).

Free of `sidecar` imports, so the unit tests check it without the sidecar or the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KINDS", "Decision", "Entity", "Event", "Line", "Option", "Scene", "load_scene", "load_scenes", "problems",
]

#: Entity kinds a scene file may use (`kind`), as the wire's ENTITY_KIND_* names them.
KINDS = ("player", "character", "item", "location", "faction", "other")
MIN_EVENTS, MIN_LINES, MIN_DECISIONS, MIN_PLACES = 10, 3, 2, 2


@dataclass(frozen=True)
class Entity:
    id: str
    kind: str
    name: str
    description: str = ""
    location: str = ""
    fields: dict[str, object] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    #: Other names a reply may use for it ("Fenwick" for "Mayor Fenwick").
    also: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.also) if self.name else self.also


@dataclass(frozen=True)
class Event:
    text: str
    entity_ids: tuple[str, ...]
    #: Where it happens; empty = where the scene's player is.
    location: str = ""


@dataclass(frozen=True)
class Line:
    speaker: str
    actor: str
    text: str


@dataclass(frozen=True)
class Option:
    action_id: str
    label: str
    target_id: str = ""
    #: The option's parameters as a JSON Schema object ({} = none; docs/runs.md, Actions with parameters).
    parameters: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    actor: str
    situation: str
    options: tuple[Option, ...]
    sensible: str = ""


@dataclass(frozen=True)
class Scene:
    id: str
    title: str
    tone: str
    player: str
    entities: tuple[Entity, ...]
    facts: dict[str, object]
    events: tuple[Event, ...]
    dialogue: tuple[Line, ...]
    decisions: tuple[Decision, ...]
    path: str = ""

    def entity(self, eid: str) -> Entity | None:
        return next((e for e in self.entities if e.id == eid), None)

    @property
    def engine_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.entities)

    @property
    def places(self) -> tuple[Entity, ...]:
        return tuple(e for e in self.entities if e.kind == "location")

    def place_of(self, eid: str) -> str:
        """The place an entity is in, following carriers (an item a character holds is where they are)."""
        seen: set[str] = set()
        current = self.entity(eid)
        while current is not None and current.kind != "location" and current.location and current.id not in seen:
            seen.add(current.id)
            holder = self.entity(current.location)
            if holder is None or holder.kind == "location":
                return current.location
            current = holder
        return current.id if current is not None and current.kind == "location" else ""

    def branch(self, place: str) -> list[str]:
        """`place` and the places containing it, innermost first."""
        chain: list[str] = []
        current = self.entity(place)
        while current is not None and current.id not in chain:
            chain.append(current.id)
            current = self.entity(current.location) if current.location else None
        return chain

    def perceived(self, actor: str, named: Iterable[str] = (), place: str = "") -> set[str]:
        """Engine IDs `actor` perceives ("" = the narrator, placed at `place`, by default where the
        player is): its own place branch and what is in it (carried things too), entities with no
        place, and what the input names (for the narrator, also what shares their places, as
        docs/privacy.md says). Lenient on purpose: a reply naming any of these is right."""
        named = set(named)
        where = [self.place_of(actor)] if actor else [place or self.place_of(self.player)]
        if not actor:
            where += [self.place_of(eid) for eid in named]
        branch = {p for w in where if w for p in self.branch(w)}
        seen = branch | named | ({actor} if actor else set())
        for entity in self.entities:
            if entity.kind == "location":
                continue
            spot = self.place_of(entity.id)
            if not spot or spot in branch:
                seen.add(entity.id)
        return seen


def _entity(raw: dict[str, object]) -> Entity:
    fields = raw.get("fields") or {}
    return Entity(
        id=str(raw["id"]), kind=str(raw.get("kind", "character")), name=str(raw.get("name", "")),
        description=str(raw.get("description", "")), location=str(raw.get("location", "")),
        fields=dict(fields) if isinstance(fields, dict) else {},
        tags=tuple(str(t) for t in _list(raw.get("tags"))), also=tuple(str(a) for a in _list(raw.get("also"))),
    )


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _dicts(value: object) -> list[dict[str, object]]:
    return [item for item in _list(value) if isinstance(item, dict)]


def _decision(raw: dict[str, object]) -> Decision:
    options = tuple(
        Option(str(o["action_id"]), str(o.get("label", "")), str(o.get("target_id", "")),
               dict(params) if isinstance(params := o.get("parameters"), dict) else {})
        for o in _dicts(raw["options"])
    )
    return Decision(str(raw["actor"]), str(raw.get("situation", "")), options, str(raw.get("sensible", "")))


def load_scene(path: Path) -> Scene:
    raw = json.loads(path.read_text(encoding="utf-8"))
    facts = raw.get("facts") or {}
    return Scene(
        id=str(raw.get("id") or path.stem), title=str(raw.get("title", "")), tone=str(raw.get("tone", "")),
        player=str(raw["player"]), entities=tuple(_entity(e) for e in _dicts(raw.get("entities"))),
        facts=dict(facts) if isinstance(facts, dict) else {},
        events=tuple(
            Event(str(e["text"]), tuple(str(i) for i in _list(e.get("entity_ids"))), str(e.get("location", "")))
            for e in _dicts(raw.get("events"))
        ),
        dialogue=tuple(Line(str(d["speaker"]), str(d["actor"]), str(d["text"])) for d in _dicts(raw.get("dialogue"))),
        decisions=tuple(_decision(d) for d in _dicts(raw.get("decisions"))),
        path=str(path),
    )


def load_scenes(directory: Path) -> list[Scene]:
    return [load_scene(p) for p in sorted(directory.glob("*.json"))]


def problems(scene: Scene) -> list[str]:
    """What breaks the shape rules of scenes/README.md ([] when none)."""
    out: list[str] = []
    ids = [e.id for e in scene.entities]
    known = set(ids)
    if len(known) != len(ids):
        out.append("duplicate entity IDs")
    out += [f"{e.id}: unknown kind {e.kind!r}" for e in scene.entities if e.kind not in KINDS]
    out += [f"{e.id}: no display name" for e in scene.entities if not e.name]
    out += [f"{e.id}: unknown location {e.location!r}" for e in scene.entities
            if e.location and e.location not in known]
    player = scene.entity(scene.player)
    if player is None or player.kind != "player":
        out.append(f"player {scene.player!r} is not a player entity of the scene")
    counts = ((len(scene.places), MIN_PLACES, "places"), (len(scene.events), MIN_EVENTS, "events"),
              (len(scene.dialogue), MIN_LINES, "dialogue lines"), (len(scene.decisions), MIN_DECISIONS, "decisions"))
    out += [f"{n} {what}, fewer than {least}" for n, least, what in counts if n < least]
    for i, event in enumerate(scene.events):
        out += [f"event {i}: unknown entity {eid!r}" for eid in event.entity_ids if eid not in known]
        if event.location and event.location not in known:
            out.append(f"event {i}: unknown location {event.location!r}")
    for i, line in enumerate(scene.dialogue):
        out += [f"line {i}: unknown entity {eid!r}" for eid in (line.speaker, line.actor) if eid not in known]
    for i, decision in enumerate(scene.decisions):
        if decision.actor not in known:
            out.append(f"decision {i}: unknown actor {decision.actor!r}")
        if len(decision.options) < 2:
            out.append(f"decision {i}: fewer than 2 options")
        out += [f"decision {i}: unknown target {o.target_id!r}" for o in decision.options
                if o.target_id and o.target_id not in known]
        if decision.sensible not in {o.action_id for o in decision.options}:
            out.append(f"decision {i}: sensible {decision.sensible!r} is not one of its options")
    actors = [line.actor for line in scene.dialogue] + [d.actor for d in scene.decisions] + [""]
    if all(scene.perceived(a) >= known for a in actors):
        out.append("every actor perceives every entity: put someone in another place")
    return out
