"""Model-only aliases for entities: assigned once when an entity first enters
the session, never derived from engine ID text, never reused.

Called by the state engine at entity creation, so replaying the journal gives
the same aliases. (First version: kind aliases only; see sidecar.projection.)
"""

from __future__ import annotations

from sidecar.state.model import AliasTable, Entity

_PREFIX = {
    "character": "npc",
    "location": "loc",
    "item": "item",
    "faction": "faction",
    "player": "player",
    "other": "thing",
}


def assign_alias(table: AliasTable, entity: Entity, mode: str = "kind") -> str:
    """Return the entity's alias, creating it on first sight."""
    existing = table.by_id.get(entity.id)
    if existing is not None:
        return existing
    prefix = _PREFIX.get(entity.kind, "thing")
    n = table.counters.get(prefix, 0) + 1
    table.counters[prefix] = n
    alias = f"{prefix}_{n}"
    table.by_id[entity.id] = alias
    table.by_alias[alias] = entity.id
    return alias
