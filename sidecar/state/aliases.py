"""Model-only aliases for entities: assigned once when an entity first enters
the session, never derived from engine ID text, never reused.

Called by the state engine at entity creation, so replaying the journal gives
the same aliases; the table travels in exports. Two modes (SessionOptions.alias_mode):

- "kind": `npc_3`, `loc_1`, `item_7` (a counter per kind prefix).
- "display_name": the entity's display name when it is a usable, unique name
  (letters with single spaces, hyphens, apostrophes or periods between them;
  not an engine ID and holding none; see `_usable_name`), else the kind alias. The first entity to claim a name
  keeps it; a later one with the same name falls back to a kind alias, because
  an alias once issued never changes.
"""

from __future__ import annotations

import re

from sidecar.state.model import AliasTable, Entity

__all__ = ["assign_alias", "KIND_PREFIX", "MAX_NAME_ALIAS_LENGTH"]

KIND_PREFIX = {
    "character": "npc",
    "location": "loc",
    "item": "item",
    "faction": "faction",
    "player": "player",
    "other": "thing",
}

#: Longer display names are not used as aliases (they are descriptions, not names).
MAX_NAME_ALIAS_LENGTH = 40

# A usable name is letters (any script) and single spaces, hyphens, apostrophes or
# periods between them. No digits, underscores, slashes or brackets: those are what
# engine IDs are made of (GUIDs, BP_Goblin_C_7, /Game/Maps/X), and an alias is
# permanent, so a name must not hold the text of an ID that only arrives later.
# It also keeps quotes and braces, which could forge prompt or JSON structure, out.
_NAME = re.compile(r"[^\W\d_]+(?:(?:\. |[ '.-])[^\W\d_]+)*\.?")


def assign_alias(table: AliasTable, entity: Entity, mode: str = "kind") -> str:
    """Return the entity's alias, creating it on first sight.

    `mode` is "kind" or "display_name"; anything else is treated as "kind".
    """
    existing = table.by_id.get(entity.id)
    if existing is not None:
        return existing
    alias = None
    if mode == "display_name":
        alias = _usable_name(table, entity)
    if alias is None:
        alias = _next_kind_alias(table, entity)
    table.by_id[entity.id] = alias
    table.by_alias[alias] = entity.id
    return alias


def _next_kind_alias(table: AliasTable, entity: Entity) -> str:
    prefix = KIND_PREFIX.get(entity.kind, "thing")
    n = table.counters.get(prefix, 0)
    while True:
        n += 1
        alias = f"{prefix}_{n}"
        # Skip numbers already taken (a display-name alias cannot look like this, but an
        # engine ID can: a game whose IDs are "npc_1" must never see that text as an alias).
        if alias not in table.by_alias and alias not in table.by_id and alias != entity.id:
            break
    table.counters[prefix] = n
    return alias


def _usable_name(table: AliasTable, entity: Entity) -> str | None:
    """The display name as an alias, or None when it cannot serve as one."""
    name = " ".join(entity.name.split())
    if not name or len(name) > MAX_NAME_ALIAS_LENGTH:
        return None
    if not _NAME.fullmatch(name):
        return None
    if name in table.by_alias:
        return None  # collision: the first holder keeps it
    # Never derived from engine ID text: a name that is, or contains, an engine ID
    # (games often default the name to the actor label) would put that ID in a prompt.
    # (IDs under 4 characters are only refused as whole words, as in the leak guard.)
    if (len(entity.id) >= 4 and entity.id in name) or name in table.by_id:
        return None
    if any(token in table.by_id for token in name.split(" ")):
        return None
    return name
