"""A minimal prompt renderer for the projection tests: it uses only Projection
output, so the leak tests can tell Projection's guarantees from the context
engine's (tests/projection/test_projection_leak_context.py drives the real one).
The worlds come from tests/world.py."""

from __future__ import annotations

from sidecar.projection import Projection
from sidecar.state.model import Moment


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


__all__ = ["render"]
