from sidecar.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Entity(_message.Message):
    __slots__ = ("id", "kind", "name", "description", "tags", "fields", "location_id", "visibility")
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.FieldValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: _types_pb2.EntityKind
    name: str
    description: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    fields: _containers.MessageMap[str, _types_pb2.FieldValue]
    location_id: str
    visibility: _types_pb2.Visibility
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[_types_pb2.EntityKind, str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., fields: _Optional[_Mapping[str, _types_pb2.FieldValue]] = ..., location_id: _Optional[str] = ..., visibility: _Optional[_Union[_types_pb2.Visibility, _Mapping]] = ...) -> None: ...

class GameEvent(_message.Message):
    __slots__ = ("text", "entity_ids", "actor_id", "moment", "visibility", "location_id", "revision")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    MOMENT_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    text: str
    entity_ids: _containers.RepeatedScalarFieldContainer[str]
    actor_id: str
    moment: _types_pb2.GameMoment
    visibility: _types_pb2.Visibility
    location_id: str
    revision: int
    def __init__(self, text: _Optional[str] = ..., entity_ids: _Optional[_Iterable[str]] = ..., actor_id: _Optional[str] = ..., moment: _Optional[_Union[_types_pb2.GameMoment, _Mapping]] = ..., visibility: _Optional[_Union[_types_pb2.Visibility, _Mapping]] = ..., location_id: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class Relation(_message.Message):
    __slots__ = ("source_id", "target_id", "kind", "strength", "visibility")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STRENGTH_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    target_id: str
    kind: str
    strength: float
    visibility: _types_pb2.Visibility
    def __init__(self, source_id: _Optional[str] = ..., target_id: _Optional[str] = ..., kind: _Optional[str] = ..., strength: _Optional[float] = ..., visibility: _Optional[_Union[_types_pb2.Visibility, _Mapping]] = ...) -> None: ...

class ActorMood(_message.Message):
    __slots__ = ("actor_id", "pad")
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAD_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    pad: _types_pb2.Pad
    def __init__(self, actor_id: _Optional[str] = ..., pad: _Optional[_Union[_types_pb2.Pad, _Mapping]] = ...) -> None: ...

class SceneFact(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: _types_pb2.Value
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.Value, _Mapping]] = ...) -> None: ...

class LoreCard(_message.Message):
    __slots__ = ("id", "title", "text", "triggers", "visibility")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    text: str
    triggers: _containers.RepeatedScalarFieldContainer[str]
    visibility: _types_pb2.Visibility
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., text: _Optional[str] = ..., triggers: _Optional[_Iterable[str]] = ..., visibility: _Optional[_Union[_types_pb2.Visibility, _Mapping]] = ...) -> None: ...

class MemoryEntry(_message.Message):
    __slots__ = ("actor_id", "text", "revision")
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    text: str
    revision: int
    def __init__(self, actor_id: _Optional[str] = ..., text: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class Story(_message.Message):
    __slots__ = ("plot_essentials", "author_note", "story_summary", "instructions")
    PLOT_ESSENTIALS_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_NOTE_FIELD_NUMBER: _ClassVar[int]
    STORY_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    plot_essentials: str
    author_note: str
    story_summary: str
    instructions: str
    def __init__(self, plot_essentials: _Optional[str] = ..., author_note: _Optional[str] = ..., story_summary: _Optional[str] = ..., instructions: _Optional[str] = ...) -> None: ...

class HpDescription(_message.Message):
    __slots__ = ("max_fraction", "text")
    MAX_FRACTION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    max_fraction: float
    text: str
    def __init__(self, max_fraction: _Optional[float] = ..., text: _Optional[str] = ...) -> None: ...

class SituationalModifier(_message.Message):
    __slots__ = ("condition", "text")
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    condition: str
    text: str
    def __init__(self, condition: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class PersonaTemplate(_message.Message):
    __slots__ = ("identity", "inviolable_rules", "mood_modifiers", "hp_descriptions", "situational_modifiers", "reminder")
    class MoodModifiersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    INVIOLABLE_RULES_FIELD_NUMBER: _ClassVar[int]
    MOOD_MODIFIERS_FIELD_NUMBER: _ClassVar[int]
    HP_DESCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    SITUATIONAL_MODIFIERS_FIELD_NUMBER: _ClassVar[int]
    REMINDER_FIELD_NUMBER: _ClassVar[int]
    identity: str
    inviolable_rules: _containers.RepeatedScalarFieldContainer[str]
    mood_modifiers: _containers.ScalarMap[str, str]
    hp_descriptions: _containers.RepeatedCompositeFieldContainer[HpDescription]
    situational_modifiers: _containers.RepeatedCompositeFieldContainer[SituationalModifier]
    reminder: str
    def __init__(self, identity: _Optional[str] = ..., inviolable_rules: _Optional[_Iterable[str]] = ..., mood_modifiers: _Optional[_Mapping[str, str]] = ..., hp_descriptions: _Optional[_Iterable[_Union[HpDescription, _Mapping]]] = ..., situational_modifiers: _Optional[_Iterable[_Union[SituationalModifier, _Mapping]]] = ..., reminder: _Optional[str] = ...) -> None: ...

class PersonaBinding(_message.Message):
    __slots__ = ("actor_id", "template_name", "inline_template", "slots")
    class SlotsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    INLINE_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    template_name: str
    inline_template: PersonaTemplate
    slots: _containers.ScalarMap[str, str]
    def __init__(self, actor_id: _Optional[str] = ..., template_name: _Optional[str] = ..., inline_template: _Optional[_Union[PersonaTemplate, _Mapping]] = ..., slots: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpsertEntityOp(_message.Message):
    __slots__ = ("entity",)
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    entity: Entity
    def __init__(self, entity: _Optional[_Union[Entity, _Mapping]] = ...) -> None: ...

class PatchEntityOp(_message.Message):
    __slots__ = ("id", "set_fields", "unset_fields", "name", "description", "tags", "has_tags", "location_id", "visibility")
    class SetFieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.FieldValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SET_FIELDS_FIELD_NUMBER: _ClassVar[int]
    UNSET_FIELDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    HAS_TAGS_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    id: str
    set_fields: _containers.MessageMap[str, _types_pb2.FieldValue]
    unset_fields: _containers.RepeatedScalarFieldContainer[str]
    name: str
    description: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    has_tags: bool
    location_id: str
    visibility: _types_pb2.Visibility
    def __init__(self, id: _Optional[str] = ..., set_fields: _Optional[_Mapping[str, _types_pb2.FieldValue]] = ..., unset_fields: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., has_tags: _Optional[bool] = ..., location_id: _Optional[str] = ..., visibility: _Optional[_Union[_types_pb2.Visibility, _Mapping]] = ...) -> None: ...

class RemoveEntityOp(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RecordEventOp(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: GameEvent
    def __init__(self, event: _Optional[_Union[GameEvent, _Mapping]] = ...) -> None: ...

class SetRelationOp(_message.Message):
    __slots__ = ("relation", "remove")
    RELATION_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    relation: Relation
    remove: bool
    def __init__(self, relation: _Optional[_Union[Relation, _Mapping]] = ..., remove: _Optional[bool] = ...) -> None: ...

class SetMoodOp(_message.Message):
    __slots__ = ("actor_id", "pad")
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAD_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    pad: _types_pb2.Pad
    def __init__(self, actor_id: _Optional[str] = ..., pad: _Optional[_Union[_types_pb2.Pad, _Mapping]] = ...) -> None: ...

class SetSceneFactOp(_message.Message):
    __slots__ = ("key", "value", "remove")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: _types_pb2.Value
    remove: bool
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.Value, _Mapping]] = ..., remove: _Optional[bool] = ...) -> None: ...

class UpsertLoreCardOp(_message.Message):
    __slots__ = ("card",)
    CARD_FIELD_NUMBER: _ClassVar[int]
    card: LoreCard
    def __init__(self, card: _Optional[_Union[LoreCard, _Mapping]] = ...) -> None: ...

class RemoveLoreCardOp(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RecordMemoryOp(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: MemoryEntry
    def __init__(self, memory: _Optional[_Union[MemoryEntry, _Mapping]] = ...) -> None: ...

class SetStoryOp(_message.Message):
    __slots__ = ("plot_essentials", "author_note", "story_summary", "instructions")
    PLOT_ESSENTIALS_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_NOTE_FIELD_NUMBER: _ClassVar[int]
    STORY_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    plot_essentials: str
    author_note: str
    story_summary: str
    instructions: str
    def __init__(self, plot_essentials: _Optional[str] = ..., author_note: _Optional[str] = ..., story_summary: _Optional[str] = ..., instructions: _Optional[str] = ...) -> None: ...

class SetPersonaOp(_message.Message):
    __slots__ = ("persona",)
    PERSONA_FIELD_NUMBER: _ClassVar[int]
    persona: PersonaBinding
    def __init__(self, persona: _Optional[_Union[PersonaBinding, _Mapping]] = ...) -> None: ...

class DeltaOp(_message.Message):
    __slots__ = ("upsert_entity", "patch_entity", "remove_entity", "record_event", "set_relation", "set_mood", "set_scene_fact", "upsert_lore_card", "remove_lore_card", "record_memory", "set_story", "set_persona")
    UPSERT_ENTITY_FIELD_NUMBER: _ClassVar[int]
    PATCH_ENTITY_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ENTITY_FIELD_NUMBER: _ClassVar[int]
    RECORD_EVENT_FIELD_NUMBER: _ClassVar[int]
    SET_RELATION_FIELD_NUMBER: _ClassVar[int]
    SET_MOOD_FIELD_NUMBER: _ClassVar[int]
    SET_SCENE_FACT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_LORE_CARD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_LORE_CARD_FIELD_NUMBER: _ClassVar[int]
    RECORD_MEMORY_FIELD_NUMBER: _ClassVar[int]
    SET_STORY_FIELD_NUMBER: _ClassVar[int]
    SET_PERSONA_FIELD_NUMBER: _ClassVar[int]
    upsert_entity: UpsertEntityOp
    patch_entity: PatchEntityOp
    remove_entity: RemoveEntityOp
    record_event: RecordEventOp
    set_relation: SetRelationOp
    set_mood: SetMoodOp
    set_scene_fact: SetSceneFactOp
    upsert_lore_card: UpsertLoreCardOp
    remove_lore_card: RemoveLoreCardOp
    record_memory: RecordMemoryOp
    set_story: SetStoryOp
    set_persona: SetPersonaOp
    def __init__(self, upsert_entity: _Optional[_Union[UpsertEntityOp, _Mapping]] = ..., patch_entity: _Optional[_Union[PatchEntityOp, _Mapping]] = ..., remove_entity: _Optional[_Union[RemoveEntityOp, _Mapping]] = ..., record_event: _Optional[_Union[RecordEventOp, _Mapping]] = ..., set_relation: _Optional[_Union[SetRelationOp, _Mapping]] = ..., set_mood: _Optional[_Union[SetMoodOp, _Mapping]] = ..., set_scene_fact: _Optional[_Union[SetSceneFactOp, _Mapping]] = ..., upsert_lore_card: _Optional[_Union[UpsertLoreCardOp, _Mapping]] = ..., remove_lore_card: _Optional[_Union[RemoveLoreCardOp, _Mapping]] = ..., record_memory: _Optional[_Union[RecordMemoryOp, _Mapping]] = ..., set_story: _Optional[_Union[SetStoryOp, _Mapping]] = ..., set_persona: _Optional[_Union[SetPersonaOp, _Mapping]] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("entities", "events", "relations", "moods", "scene_facts", "lore_cards", "memories", "story", "personas")
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    MOODS_FIELD_NUMBER: _ClassVar[int]
    SCENE_FACTS_FIELD_NUMBER: _ClassVar[int]
    LORE_CARDS_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    STORY_FIELD_NUMBER: _ClassVar[int]
    PERSONAS_FIELD_NUMBER: _ClassVar[int]
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    events: _containers.RepeatedCompositeFieldContainer[GameEvent]
    relations: _containers.RepeatedCompositeFieldContainer[Relation]
    moods: _containers.RepeatedCompositeFieldContainer[ActorMood]
    scene_facts: _containers.RepeatedCompositeFieldContainer[SceneFact]
    lore_cards: _containers.RepeatedCompositeFieldContainer[LoreCard]
    memories: _containers.RepeatedCompositeFieldContainer[MemoryEntry]
    story: Story
    personas: _containers.RepeatedCompositeFieldContainer[PersonaBinding]
    def __init__(self, entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[GameEvent, _Mapping]]] = ..., relations: _Optional[_Iterable[_Union[Relation, _Mapping]]] = ..., moods: _Optional[_Iterable[_Union[ActorMood, _Mapping]]] = ..., scene_facts: _Optional[_Iterable[_Union[SceneFact, _Mapping]]] = ..., lore_cards: _Optional[_Iterable[_Union[LoreCard, _Mapping]]] = ..., memories: _Optional[_Iterable[_Union[MemoryEntry, _Mapping]]] = ..., story: _Optional[_Union[Story, _Mapping]] = ..., personas: _Optional[_Iterable[_Union[PersonaBinding, _Mapping]]] = ...) -> None: ...
