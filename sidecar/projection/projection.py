"""One actor's view of a session, in model terms: aliases instead of engine IDs,
only what the actor may perceive, coordinates left out. The context engine
builds prompts from this and nothing else; replies come back through `resolve`.

What the actor may perceive (the perspective rules, docs/privacy.md has the
full table) is `Perspective`, in sidecar/projection/perspective.py; here is how
that reads for a model, and the way back from the aliases a model writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sidecar.errors import UnknownEntity
from sidecar.idsearch import Mask
from sidecar.projection.dealias import KIND_ALIAS
from sidecar.projection.perspective import Perspective
from sidecar.state.aliases import KIND_PREFIX
from sidecar.state.model import Entity, EntityRef, Moment, Session, Value, Vec3

__all__ = ["AliasRejected", "GENERIC_WORDS", "Projection"]

_GENERIC = {"character": "someone", "player": "someone", "location": "somewhere"}
#: A handle's prefix -> its kind (`npc` -> "character"), for a handle that was never issued.
_KIND_OF_PREFIX = {prefix: kind for kind, prefix in KIND_PREFIX.items()}
#: Every word the projection writes for what an actor cannot perceive.
GENERIC_WORDS = frozenset({*_GENERIC.values(), "something"})


class AliasRejected(Exception):
    """The model named an alias that was never issued, or one the actor may not see.

    `reason` is safe to show to the model (it holds no engine ID)."""

    def __init__(self, alias: str, reason: str) -> None:
        super().__init__(f"{alias!r}: {reason}")
        self.alias = alias
        self.reason = reason


class Projection(Perspective):
    """What `actor_id` ("" = the narrator) may perceive of `session`, aliased.

    `named_ids`: engine IDs the run's input names (focus entities, event
    participants, the describe target, option targets); they become perceivable
    (see sidecar/projection/perspective.py). Raises UnknownEntity for an actor or a
    named ID the session does not hold, InvalidRequest for a hidden actor.
    """

    def __init__(self, session: Session, actor_id: str, *, named_ids: Iterable[str] = ()) -> None:
        super().__init__(session, actor_id, named_ids=named_ids)
        opts = session.options
        self._suppressed = set(opts.coordinate_fields) - set(opts.exposed_coordinate_fields)
        self._by_id = session.aliases.by_id
        #: While a caller renders with `noting`: each (engine ID, how it read) `ref_text` gave.
        self._noted: list[tuple[str, str]] | None = None
        #: Every engine ID the leak guard must refuse (see SessionIndex.guard_ids).
        self.engine_ids: frozenset[str] = self._idx.guard_ids
        #: Every alias issued: the guard does not count an engine ID's text inside one.
        self.alias_mask: Mask = self._idx.alias_mask

    # -- entities -------------------------------------------------------------

    def alias(self, engine_id: str) -> str:
        """The entity's alias. UnknownEntity when the session does not hold it."""
        if engine_id not in self._entities:
            raise UnknownEntity(f"entity {engine_id!r} is not in session {self.session.id!r}")
        return self.session.aliases.by_id[engine_id]

    def is_coordinate(self, name: str) -> bool:
        """Whether a named value is a suppressed coordinate: named in the session's
        `coordinate_fields` and not in `exposed_coordinate_fields`. The one rule for
        every named value a prompt could show (entity fields and scene facts), whatever
        the value's shape: a list under that name is dropped whole, items included."""
        return name in self._suppressed

    def fields(self, entity: Entity) -> dict[str, str]:
        """The entity's fields this actor may see, minus coordinates, as text.
        Empty for an entity the actor cannot see."""
        if not self.can_see(entity):
            return {}
        out: dict[str, str] = {}
        for name, field in entity.fields.items():
            if self.is_coordinate(name):
                continue
            if field.visibility is not None and not self._field_visible(entity, field.visibility):
                continue
            out[self.text(name)] = self.value_text(field.value)
        return out

    def scene_facts(self) -> list[tuple[str, str]]:
        """The session's scene facts as (name, value) text, minus coordinates (`is_coordinate`)."""
        return [
            (self.text(name), self.value_text(value))
            for name, value in self.session.world.scene.items()
            if not self.is_coordinate(name)
        ]

    def ref_text(self, engine_id: str) -> str:
        """How a reference to `engine_id` reads for this actor: its alias when the
        actor can see it, else a generic word ("someone", "somewhere", "something")."""
        ent = self._entities.get(engine_id)
        if ent is not None and self.can_see(ent):
            text = self._by_id[engine_id]
        else:
            text = _GENERIC.get(ent.kind, "something") if ent is not None else "something"
        if self._noted is not None:
            self._noted.append((engine_id, text))
        return text

    def noting(self, render: Callable[[], str]) -> tuple[str, tuple[tuple[str, str], ...]]:
        """`render()`'s text and each (engine ID, how it read) the render replaced, so a
        cache can keep the text while the same matcher (`id_matcher`) finds the same IDs
        and each still reads the same (sidecar/context/timeline.py)."""
        noted: list[tuple[str, str]] = []
        self._noted = noted
        try:
            return render(), tuple(noted)
        finally:
            self._noted = None

    @property
    def id_matcher(self) -> object:
        """What `text` replaces by (the engine-ID matcher and the alias mask): the same
        object while both are the same."""
        return self._idx.text_rule

    def value_text(self, value: Value) -> str:
        if type(value) is str:  # the common kinds first, by exact type (a bool is no int)
            return self.text(value)
        if type(value) is int:
            return str(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, EntityRef):
            return self.ref_text(value.id)
        if isinstance(value, Vec3):
            return f"({value.x:g}, {value.y:g}, {value.z:g})"
        if isinstance(value, list):
            return "[" + ", ".join(self.value_text(v) for v in value) + "]"
        return self.text(str(value))

    def text(self, free_text: str, *, keep: Mask | None = None) -> str:
        """Game-supplied text with every engine ID in it replaced by what `ref_text`
        gives, in one pass (the rule for what counts as an occurrence:
        sidecar.idsearch; an ID's text inside an alias is none, as for the
        guard). Only game text comes here: the project's own words never do, or (text
        that mixes both, such as a decision's rejection reason) come as `keep`."""
        if not free_text:
            return free_text
        mask = self.alias_mask if keep is None else self.alias_mask.plus(keep)
        return self._idx.matcher.sub(free_text, self.ref_text, mask)

    def holds_engine_id(self, text: str) -> bool:
        """Whether `text` holds a searchable engine ID of the session (the guard's rule,
        aliases masked)."""
        return self._idx.matcher.first(text, self.alias_mask) is not None

    # -- the moment -------------------------------------------------------------

    def moment_text(self, moment: Moment | None) -> str:
        """The parts of the moment the session exposes, as text ("" when none)."""
        if moment is None:
            return ""
        exp = self.session.options.expose_moment
        parts: list[str] = []
        if exp.calendar and moment.calendar:
            parts.append(self.text(moment.calendar))
        if exp.timeline and moment.timeline:
            parts.append(f"timeline {self.text(moment.timeline)}")
        if exp.tick:
            parts.append(f"tick {moment.tick}")
        return ", ".join(parts)

    def guard_moment(self, moment: Moment | None) -> Moment | None:
        """The parts of `moment` that must not reach a model (for check_outgoing)."""
        if moment is None:
            return None
        exp = self.session.options.expose_moment
        return Moment(
            timeline="" if exp.timeline else moment.timeline,
            tick=0 if exp.tick else moment.tick,
            calendar="" if exp.calendar else moment.calendar,
        )

    # -- reverse mapping ----------------------------------------------------------

    def resolve(self, alias: str) -> str:
        """The engine ID behind an alias the model returned. Never guesses: an alias
        never issued, one whose entity left, or one this actor cannot see is
        rejected with AliasRejected."""
        key = alias.strip()
        # The reason goes back to the model in the retry prompt: quote the alias only
        # when that cannot put an engine ID (or a wall of text) into the next request.
        said = repr(key) if len(key) <= 40 and not self.holds_engine_id(key) else "that name"
        if key in self._idx.engine_ids:
            said = "that name"
        engine_id = self.session.aliases.by_alias.get(key)
        if engine_id is None:
            raise AliasRejected(alias, f"{said} is not a name you were given")
        ent = self._entities.get(engine_id)
        if ent is None:
            raise AliasRejected(alias, f"{said} is no longer here")
        if not self.can_see(ent):
            raise AliasRejected(alias, f"{said} is not something you can perceive")
        return engine_id

    def display(self, alias: str) -> tuple[str, str] | None:
        """How an alias the model wrote reads for the game: (text, engine ID), or
        None when it is no alias of this session (the text is left as the model wrote it).

        An entity this actor perceives reads as its display name as the game set it
        (whitespace collapsed; the generic word when it has none) and is mentioned by
        its engine ID; one it does not perceive, or one removed, reads as the generic
        word and is not mentioned ("" as the ID): naming it would tell the player
        what the actor cannot know. A handle the model made up (`npc_99`, never issued)
        reads as its kind's generic word: a handle never reaches a player's screen."""
        engine_id = self.session.aliases.by_alias.get(alias)
        if engine_id is None:
            kind = _KIND_OF_PREFIX.get(alias.rsplit("_", 1)[0]) if KIND_ALIAS.fullmatch(alias) else None
            return None if kind is None else (_GENERIC.get(kind, "something"), "")
        ent = self._entities.get(engine_id)
        if ent is None:
            return "something", ""
        if not self.can_see(ent):
            return _GENERIC.get(ent.kind, "something"), ""
        return " ".join(ent.name.split()) or _GENERIC.get(ent.kind, "something"), engine_id
