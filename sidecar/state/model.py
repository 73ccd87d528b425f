"""The session's data, as plain msgspec Structs: what the engine mutates, the
journal encodes, the projection reads and an export carries. No logic here
beyond defaults; no grpc, no generated code.

Owners: the state engine (`sidecar.state`) mutates `World`; aliases are
assigned by `sidecar.state.aliases`; transcripts, notes and memories are
written by runs (`sidecar.context`, `sidecar.runs`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

#: The highest revision a session can reach (2^53 - 1). Exact in a double, so an
#: engine's scripting layer or JSON tooling holds it without rounding, and far
#: from int64's end, so `revision + 1` never overflows the wire or the journal.
MAX_REVISION = 2**53 - 1

Kind = Literal["character", "location", "item", "faction", "player", "other"]
Level = Literal["public", "known_to", "private", "hidden"]
AliasMode = Literal["kind", "display_name"]
#: Who a transcript entry is from.
Role = Literal["player", "actor", "narrator", "event", "continue"]


class Vec3(msgspec.Struct, frozen=True, tag="vec3"):
    x: float
    y: float
    z: float


class EntityRef(msgspec.Struct, frozen=True, tag="ref"):
    """A field value that points at another entity of the session (engine ID)."""

    id: str


#: A typed field value. A list holds Values (nested lists up to the depth limit).
Value = str | int | float | bool | Vec3 | EntityRef | list[Any]


class Visibility(msgspec.Struct, frozen=True):
    level: Level = "public"
    #: Engine IDs of the actors that know it (level "known_to").
    known_to: tuple[str, ...] = ()


PUBLIC = Visibility()


class Field(msgspec.Struct):
    value: Value
    #: None: the entity's own visibility applies.
    visibility: Visibility | None = None


class Entity(msgspec.Struct):
    id: str
    kind: Kind = "other"
    name: str = ""
    description: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    fields: dict[str, Field] = msgspec.field(default_factory=dict)
    #: Engine ID of the containing location ("" = nowhere).
    location_id: str = ""
    visibility: Visibility = PUBLIC


class Moment(msgspec.Struct, frozen=True):
    timeline: str = ""
    tick: int = 0
    calendar: str = ""


class Event(msgspec.Struct):
    text: str
    entity_ids: list[str] = msgspec.field(default_factory=list)
    actor_id: str = ""
    moment: Moment | None = None
    visibility: Visibility = PUBLIC
    location_id: str = ""
    #: Revision of the batch that recorded it.
    revision: int = 0


class Relation(msgspec.Struct):
    source_id: str
    target_id: str
    kind: str
    strength: float = 0.0
    visibility: Visibility = PUBLIC


class Pad(msgspec.Struct, frozen=True):
    pleasure: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0


class LoreCard(msgspec.Struct):
    id: str
    title: str = ""
    text: str = ""
    triggers: list[str] = msgspec.field(default_factory=list)
    visibility: Visibility = PUBLIC


class Memory(msgspec.Struct):
    actor_id: str
    text: str
    revision: int = 0


class Story(msgspec.Struct):
    plot_essentials: str = ""
    author_note: str = ""
    story_summary: str = ""
    instructions: str = ""


class HpDescription(msgspec.Struct):
    max_fraction: float
    text: str


class SituationalModifier(msgspec.Struct):
    condition: str
    text: str


class PersonaTemplate(msgspec.Struct):
    identity: str = ""
    inviolable_rules: list[str] = msgspec.field(default_factory=list)
    mood_modifiers: dict[str, str] = msgspec.field(default_factory=dict)
    hp_descriptions: list[HpDescription] = msgspec.field(default_factory=list)
    situational_modifiers: list[SituationalModifier] = msgspec.field(default_factory=list)
    reminder: str = ""


class PersonaBinding(msgspec.Struct):
    actor_id: str
    #: Name of a template file (hot reloaded) or None when `inline` is set.
    template_name: str | None = None
    inline: PersonaTemplate | None = None
    slots: dict[str, str] = msgspec.field(default_factory=dict)


class World(msgspec.Struct):
    """Everything the game told the sidecar, keyed by engine IDs."""

    entities: dict[str, Entity] = msgspec.field(default_factory=dict)
    #: Recent events, oldest first (bounded by the events limit).
    events: list[Event] = msgspec.field(default_factory=list)
    relations: list[Relation] = msgspec.field(default_factory=list)
    moods: dict[str, Pad] = msgspec.field(default_factory=dict)
    scene: dict[str, Value] = msgspec.field(default_factory=dict)
    lore: dict[str, LoreCard] = msgspec.field(default_factory=dict)
    memories: list[Memory] = msgspec.field(default_factory=list)
    story: Story = msgspec.field(default_factory=Story)
    personas: dict[str, PersonaBinding] = msgspec.field(default_factory=dict)
    #: Events dropped from the front of `events` by the events limit, in all (a
    #: prompt reports them in its left_out: they are no longer held).
    events_dropped: int = 0


class MomentExposure(msgspec.Struct, frozen=True):
    timeline: bool = False
    tick: bool = False
    calendar: bool = False


class SessionOptions(msgspec.Struct):
    alias_mode: AliasMode = "kind"
    expose_moment: MomentExposure = MomentExposure()
    coordinate_fields: list[str] = msgspec.field(default_factory=list)
    exposed_coordinate_fields: list[str] = msgspec.field(default_factory=list)
    #: 0: from the model's context window.
    budget_tokens: int = 0
    #: "": the default profile.
    profile: str = ""
    memory_bank: bool = True


class AliasTable(msgspec.Struct):
    """Model-only names. Never derived from engine ID text; stable for the session."""

    by_id: dict[str, str] = msgspec.field(default_factory=dict)
    by_alias: dict[str, str] = msgspec.field(default_factory=dict)
    #: Next number per alias prefix ("npc" -> 4).
    counters: dict[str, int] = msgspec.field(default_factory=dict)


class EntryMention(msgspec.Struct, frozen=True, array_like=True):
    """An entity a transcript entry's shown text names: `shown[start:start + length]` (code points)."""

    entity_id: str
    start: int
    length: int


class TranscriptEntry(msgspec.Struct):
    role: Role
    text: str
    speaker_id: str = ""
    interrupted: bool = False
    run_id: str = ""
    unix_ms: int = 0
    #: Session revision the run's prompt was built at: orders the entry among world
    #: events (an event of revision r happened before an entry of revision >= r).
    revision: int = 0
    #: `text` as the run streamed it to the game (display names, not aliases), set when
    #: it differs from `text`'s model form; None: show `text` (or, for an entry recorded
    #: before this field, dealias it when read).
    shown: str | None = None
    #: The entities `shown` names (ReadTranscript's mentions).
    mentions: list[EntryMention] = msgspec.field(default_factory=list)


class TranscriptSummary(msgspec.Struct):
    """What an actor's transcript no longer holds (sidecar.context.compaction): the
    oldest entries, summarised by a model, and any dropped by the transcript cap."""

    #: The summary as the model wrote it (aliases, like a reply in the transcript).
    text: str = ""
    #: Entries folded into `text`, in all.
    summarised: int = 0
    #: Entries dropped by the transcript cap without a summary, in all.
    dropped: int = 0
    #: World events numbered below this (counted from the session's first) are held by
    #: `text` where the actor perceived them: folded in before they left past the events
    #: cap (sidecar.runs.compaction).
    events_through: int = 0
    #: World events folded into `text`, in all.
    events_summarised: int = 0

    @property
    def removed(self) -> int:
        """Entries gone from the front of the transcript: its first entry's absolute index."""
        return self.summarised + self.dropped


class ActorUsage(msgspec.Struct):
    """What an actor's model calls used: its runs', and apart from them its transcript's
    summaries' (compaction, made in the background: docs/context.md)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    runs: int = 0
    summaries: int = 0
    summary_prompt_tokens: int = 0
    summary_completion_tokens: int = 0
    summary_cost_usd: float = 0.0


class Session(msgspec.Struct):
    """One game session: its world at `revision`, plus what runs accumulate."""

    id: str
    options: SessionOptions = msgspec.field(default_factory=SessionOptions)
    revision: int = 0
    world: World = msgspec.field(default_factory=World)
    aliases: AliasTable = msgspec.field(default_factory=AliasTable)
    #: Actor engine ID ("" = narrator) -> entries, append-only.
    transcripts: dict[str, list[TranscriptEntry]] = msgspec.field(default_factory=dict)
    #: Actor engine ID -> what its transcript no longer holds (compaction, the cap).
    summaries: dict[str, TranscriptSummary] = msgspec.field(default_factory=dict)
    #: Actor engine ID -> private notes (docs/context.md, Decisions and notes).
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    usage: dict[str, ActorUsage] = msgspec.field(default_factory=dict)
    #: Error reason -> count, for GetInfo stats.
    errors_by_reason: dict[str, int] = msgspec.field(default_factory=dict)
    #: Recent delta IDs -> the revision they produced, oldest first (bounded by
    #: StateLimits.delta_id_window), for idempotent replays. Not exported.
    recent_deltas: dict[str, int] = msgspec.field(default_factory=dict)
    #: Delta ID -> digest of its batch (`codec.ops_digest`), for the IDs of
    #: `recent_deltas` that have one (an ID remembered before digests were kept has
    #: none): a reused ID with other ops is refused, not replayed. Not exported.
    delta_digests: dict[str, bytes] = msgspec.field(default_factory=dict)
    #: Actor engine ID -> what its last prompt held (the history it kept, its lore and
    #: memory blocks), encoded by sidecar/context/prefix_state.py: the next prompt
    #: extends that prefix. Exported, so an imported session builds the same prompts.
    prompt_state: dict[str, bytes] = msgspec.field(default_factory=dict)
