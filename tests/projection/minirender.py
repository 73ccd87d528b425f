"""Small worlds for the projection tests, built through the real state engine
(`apply_ops`), so aliases are assigned the way a game's deltas assign them."""

from __future__ import annotations

from sidecar.config import StateLimits
from sidecar.projection import Projection
from sidecar.state import ops as o
from sidecar.state.apply import apply_ops
from sidecar.state.model import (
    Entity,
    Event,
    Field,
    LoreCard,
    Moment,
    Relation,
    Session,
    SessionOptions,
    Visibility,
)

HIDDEN = Visibility("hidden")
PRIVATE = Visibility("private")


def known_to(*ids: str) -> Visibility:
    return Visibility("known_to", tuple(ids))


def apply(session: Session, *ops: o.Op) -> Session:
    apply_ops(session, list(ops), session.revision + 1, StateLimits())
    return session


def upsert(session: Session, *entities: Entity) -> Session:
    return apply(session, *(o.UpsertEntity(e) for e in entities))


def tavern_world(options: SessionOptions | None = None) -> Session:
    """Two rooms. The tavern holds the goblin, the hero and a chest; the forest holds a wolf.

    Engine IDs are distinctive on purpose, so a substring search finds any leak.
    """
    s = Session(id="save-slot-7f3a", options=options or SessionOptions())
    upsert(
        s,
        Entity(id="/Game/Maps/World.World", kind="location", name="The World"),
        Entity(id="LOC_Tavern_0001", kind="location", name="Tavern", location_id="/Game/Maps/World.World"),
        Entity(id="LOC_Forest_0002", kind="location", name="Forest", location_id="/Game/Maps/World.World"),
        Entity(
            id="BP_Goblin_C_2147483647",
            kind="character",
            name="Grub",
            description="A goblin who owes BP_Wolf_C_0000000042 money.",
            location_id="LOC_Tavern_0001",
            fields={
                "hp": Field(12),
                "position": Field([1.5, 2.0, 3.0]),
                "grudge": Field("hates the wolf", PRIVATE),
                "gm_note": Field("secretly the king", HIDDEN),
                "password": Field("swordfish-77", known_to("9b2d5c1e-hero-0000-0000-000000000001")),
            },
        ),
        Entity(
            id="9b2d5c1e-hero-0000-0000-000000000001",
            kind="player",
            name="Hero",
            location_id="LOC_Tavern_0001",
        ),
        Entity(id="BP_Chest_C_0000000777", kind="item", name="Chest", location_id="LOC_Tavern_0001"),
        Entity(id="BP_Wolf_C_0000000042", kind="character", name="Wolf", location_id="LOC_Forest_0002"),
        Entity(
            id="BP_Spy_C_0000000099", kind="character", name="Spy", location_id="LOC_Tavern_0001", visibility=HIDDEN
        ),
        Entity(id="ITEM_Ring_ÿ_0001", kind="item", name="Ring", location_id="9b2d5c1e-hero-0000-0000-000000000001"),
        Entity(id="FAC_Thieves_0001", kind="faction", name="Thieves Guild"),
        Entity(id="FAC_Cult_0001", kind="faction", name="Cult", visibility=known_to("BP_Goblin_C_2147483647")),
    )
    return s


def render(p: Projection, input_text: str = "", moment: Moment | None = None) -> list[dict[str, str]]:
    """A minimal prompt renderer that uses only Projection output (stands in for
    the context engine in the leak tests): everything the actor perceives."""
    w = p.session.world
    lines: list[str] = []
    for e in p.visible_entities():
        lines.append(f"{p.alias(e.id)} ({e.kind}) {p.text(e.name)}: {p.text(e.description)}")
        lines.append("  tags: " + ", ".join(p.text(t) for t in e.tags))
        lines.extend(f"  {k} = {v}" for k, v in p.fields(e).items())
        if e.location_id:
            lines.append(f"  in {p.ref_text(e.location_id)}")
    lines.extend(p.text(ev.text) for ev in w.events if p.can_see_event(ev))
    lines.extend(
        f"{p.ref_text(r.source_id)} {p.text(r.kind)} {p.ref_text(r.target_id)}"
        for r in w.relations
        if p.can_see_relation(r)
    )
    lines.extend(f"{p.text(c.title)}: {p.text(c.text)}" for c in w.lore.values() if p.can_see_card(c))
    lines.extend(f"{k} = {p.value_text(v)}" for k, v in w.scene.items())
    when = p.moment_text(moment)
    me = p.alias(p.actor_id) if p.actor_id else "the narrator"
    return [
        {"role": "system", "content": f"You are {me}.\n" + "\n".join(lines)},
        {"role": "user", "content": (f"[{when}] " if when else "") + p.text(input_text)},
    ]


__all__ = [
    "render",
    "HIDDEN",
    "PRIVATE",
    "known_to",
    "apply",
    "upsert",
    "tavern_world",
    "Event",
    "LoreCard",
    "Relation",
]
