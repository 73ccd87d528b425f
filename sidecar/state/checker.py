"""The per-batch checker `validate.validate_batch` drives: scalar, value and
reference checks, and the overlay of what the batch so far did (entities
created or removed, field names, collection sizes)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NoReturn

from sidecar.config import StateLimits
from sidecar.errors import CapacityExceeded, InvalidDelta, LimitExceeded, UnknownEntity
from sidecar.idsearch import invisible_only
from sidecar.state.model import EntityRef, Field, Moment, PersonaTemplate, Vec3, Visibility, World

__all__ = ["Checker", "KINDS", "LEVELS"]

KINDS = frozenset({"character", "location", "item", "faction", "player", "other"})
LEVELS = frozenset({"public", "known_to", "private", "hidden"})
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class Checker:
    def __init__(self, world: World, limits: StateLimits, fresh_ids: Iterable[str]) -> None:
        self.world = world
        self.lim = limits
        self.index = 0
        self.history_refs = True
        #: Entity ID -> exists after the ops so far (only IDs the batch touched).
        self.exists: dict[str, bool] = dict.fromkeys(fresh_ids, True)
        self.entity_count = len(world.entities) + sum(1 for i in self.exists if i not in world.entities)
        #: Entity ID -> its field names after the ops so far (touched entities only).
        self.fields: dict[str, set[str]] = {}
        self.upserted: set[str] = set()
        self.relations: set[tuple[str, str, str]] | None = None
        self.lore: set[str] | None = None
        self.scene: set[str] | None = None
        self.personas: set[str] | None = None

    # -- errors --------------------------------------------------------------
    def fail(self, msg: str) -> NoReturn:
        raise InvalidDelta(f"op {self.index}: {msg}", metadata={"op_index": str(self.index)})

    def over(self, limit: str, msg: str, capacity: bool = False) -> NoReturn:
        cls = CapacityExceeded if capacity else LimitExceeded
        value = getattr(self.lim, limit)
        raise cls(
            f"op {self.index}: {msg}, over {limit}={value}", metadata={"limit": limit, "op_index": str(self.index)}
        )

    # -- scalars -------------------------------------------------------------
    def ident(self, value: object, what: str) -> str:
        """`value` when it is a usable ID (returned typed), else raises."""
        if type(value) is not str or not value:
            self.fail(f"{what} is empty")
        elif len(value) > self.lim.max_id_length:
            self.over("max_id_length", f"{what} has {len(value)} characters")
        elif not value.isascii():
            self.utf8(value, what)
        if invisible_only(value):
            # Nothing visible to tell it apart by, and nothing the leak guard could search
            # for (an ID is compared without its invisible characters: docs/privacy.md).
            self.fail(f"{what} is only whitespace or invisible characters")
        return value

    def text(self, value: object, what: str) -> None:
        if type(value) is not str:
            self.fail(f"{what} is not a string")
        elif len(value) > self.lim.max_string_length:
            self.over("max_string_length", f"{what} has {len(value)} characters")
        elif not value.isascii():
            self.utf8(value, what)

    def utf8(self, value: str, what: str) -> None:
        # Protobuf refuses invalid UTF-8 on parse; this keeps lone surrogates that
        # reach the domain some other way out of the state (and the journal).
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(f"{what} is not valid UTF-8 (lone surrogate)")

    def texts(self, values: object, what: str) -> None:
        if not isinstance(values, (list, tuple)):
            self.fail(f"{what} is not a list")
            return
        if len(values) > self.lim.max_list_length:
            self.over("max_list_length", f"{what} has {len(values)} items")
        for v in values:
            self.text(v, what)

    def number(self, value: object, what: str) -> None:
        if not (type(value) is float or type(value) is int) or not math.isfinite(value):
            self.fail(f"{what} must be a finite number")

    def exists_id(self, entity_id: str) -> bool:
        known = self.exists.get(entity_id)
        return (entity_id in self.world.entities) if known is None else known

    def ref(self, entity_id: object, what: str, *, optional: bool = False, history: bool = False) -> None:
        if optional and entity_id == "":
            return
        known_id = self.ident(entity_id, what)
        if history and not self.history_refs:
            return
        if not self.exists_id(known_id):
            raise UnknownEntity(
                f"op {self.index}: {what} {entity_id!r} is not an entity of the session",
                metadata={"op_index": str(self.index), "entity_id": str(entity_id)},
            )

    def visibility(self, vis: object, what: str) -> None:
        if type(vis) is not Visibility:
            self.fail(f"{what} is not a Visibility")
            return
        if vis.level not in LEVELS:
            self.fail(f"{what}.level {vis.level!r} is not one of {sorted(LEVELS)}")
        known = vis.known_to
        if len(known) > self.lim.max_list_length:
            self.over("max_list_length", f"{what}.known_to has {len(known)} items")
        for actor in known:
            self.ident(actor, f"{what}.known_to")

    def value(self, v: object, what: str, depth: int = 0) -> None:
        # Exact types (a bool is no int here), each written `type(v) is X` so it narrows `v`.
        if type(v) is str:
            if len(v) > self.lim.max_string_length:
                self.over("max_string_length", f"{what} has {len(v)} characters")
            if not v.isascii():
                self.utf8(v, what)
        elif type(v) is float:
            if not math.isfinite(v):
                self.fail(f"{what} is not a finite number")
        elif type(v) is int:
            if not _INT64_MIN <= v <= _INT64_MAX:
                self.fail(f"{what} does not fit in 64 bits")
        elif type(v) is bool:
            pass
        elif type(v) is Vec3:
            x, y, z = v.x, v.y, v.z
            # Floats only: the journal and saves would turn ints into floats on the way back.
            if not (type(x) is float and type(y) is float and type(z) is float) or not (
                math.isfinite(x) and math.isfinite(y) and math.isfinite(z)
            ):
                self.fail(f"{what} is not a vector of finite floats")
        elif type(v) is EntityRef:
            self.ref(v.id, f"{what} reference")
        elif type(v) is list:
            if depth + 1 > self.lim.max_value_depth:
                self.over("max_value_depth", f"{what} nests lists {depth + 1} deep")
            if len(v) > self.lim.max_list_length:
                self.over("max_list_length", f"{what} has {len(v)} items")
            for item in v:
                self.value(item, what, depth + 1)
        else:
            self.fail(f"{what} has no value (set one of the Value kinds)")

    def field_map(self, fields: dict[str, Field], what: str) -> None:
        max_id = self.lim.max_id_length
        for name, f in fields.items():
            if not name or len(name) > max_id or not name.isascii():
                self.ident(name, f"{what} name")
            if type(f) is not Field:
                self.fail(f"{what} {name!r} is not a Field")
            self.value(f.value, f"{what} {name!r}")
            if f.visibility is not None:
                self.visibility(f.visibility, f"{what} {name!r} visibility")

    def field_count(self, entity_id: str, names: set[str]) -> None:
        if len(names) > self.lim.max_fields_per_entity:
            self.over("max_fields_per_entity", f"entity {entity_id!r} would have {len(names)} fields")
        self.fields[entity_id] = names

    def moment(self, m: Moment | None) -> None:
        if m is None:
            return
        self.text(m.timeline, "moment.timeline")
        self.text(m.calendar, "moment.calendar")
        if type(m.tick) is not int or not _INT64_MIN <= m.tick <= _INT64_MAX:
            self.fail("moment.tick does not fit in 64 bits")

    def template(self, t: PersonaTemplate) -> None:
        self.text(t.identity, "template.identity")
        self.text(t.reminder, "template.reminder")
        self.texts(t.inviolable_rules, "template.inviolable_rules")
        self.texts(list(t.mood_modifiers) + list(t.mood_modifiers.values()), "template.mood_modifiers")
        for hp in t.hp_descriptions:
            self.number(hp.max_fraction, "template.hp_descriptions.max_fraction")
            self.text(hp.text, "template.hp_descriptions.text")
        for sm in t.situational_modifiers:
            self.text(sm.condition, "template.situational_modifiers.condition")
            self.text(sm.text, "template.situational_modifiers.text")
