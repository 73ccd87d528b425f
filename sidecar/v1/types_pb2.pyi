from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EntityKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENTITY_KIND_UNSPECIFIED: _ClassVar[EntityKind]
    ENTITY_KIND_CHARACTER: _ClassVar[EntityKind]
    ENTITY_KIND_LOCATION: _ClassVar[EntityKind]
    ENTITY_KIND_ITEM: _ClassVar[EntityKind]
    ENTITY_KIND_FACTION: _ClassVar[EntityKind]
    ENTITY_KIND_PLAYER: _ClassVar[EntityKind]
    ENTITY_KIND_OTHER: _ClassVar[EntityKind]

class VisibilityLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VISIBILITY_LEVEL_UNSPECIFIED: _ClassVar[VisibilityLevel]
    VISIBILITY_LEVEL_PUBLIC: _ClassVar[VisibilityLevel]
    VISIBILITY_LEVEL_KNOWN_TO: _ClassVar[VisibilityLevel]
    VISIBILITY_LEVEL_PRIVATE: _ClassVar[VisibilityLevel]
    VISIBILITY_LEVEL_HIDDEN: _ClassVar[VisibilityLevel]
ENTITY_KIND_UNSPECIFIED: EntityKind
ENTITY_KIND_CHARACTER: EntityKind
ENTITY_KIND_LOCATION: EntityKind
ENTITY_KIND_ITEM: EntityKind
ENTITY_KIND_FACTION: EntityKind
ENTITY_KIND_PLAYER: EntityKind
ENTITY_KIND_OTHER: EntityKind
VISIBILITY_LEVEL_UNSPECIFIED: VisibilityLevel
VISIBILITY_LEVEL_PUBLIC: VisibilityLevel
VISIBILITY_LEVEL_KNOWN_TO: VisibilityLevel
VISIBILITY_LEVEL_PRIVATE: VisibilityLevel
VISIBILITY_LEVEL_HIDDEN: VisibilityLevel

class Visibility(_message.Message):
    __slots__ = ("level", "known_to")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    KNOWN_TO_FIELD_NUMBER: _ClassVar[int]
    level: VisibilityLevel
    known_to: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, level: _Optional[_Union[VisibilityLevel, str]] = ..., known_to: _Optional[_Iterable[str]] = ...) -> None: ...

class Vec3(_message.Message):
    __slots__ = ("x", "y", "z")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    z: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ..., z: _Optional[float] = ...) -> None: ...

class ValueList(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, values: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("string_value", "int_value", "double_value", "bool_value", "vector_value", "entity_ref", "list_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_VALUE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_REF_FIELD_NUMBER: _ClassVar[int]
    LIST_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    int_value: int
    double_value: float
    bool_value: bool
    vector_value: Vec3
    entity_ref: str
    list_value: ValueList
    def __init__(self, string_value: _Optional[str] = ..., int_value: _Optional[int] = ..., double_value: _Optional[float] = ..., bool_value: _Optional[bool] = ..., vector_value: _Optional[_Union[Vec3, _Mapping]] = ..., entity_ref: _Optional[str] = ..., list_value: _Optional[_Union[ValueList, _Mapping]] = ...) -> None: ...

class FieldValue(_message.Message):
    __slots__ = ("value", "visibility")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    value: Value
    visibility: Visibility
    def __init__(self, value: _Optional[_Union[Value, _Mapping]] = ..., visibility: _Optional[_Union[Visibility, _Mapping]] = ...) -> None: ...

class GameMoment(_message.Message):
    __slots__ = ("timeline", "tick", "calendar")
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    TICK_FIELD_NUMBER: _ClassVar[int]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    timeline: str
    tick: int
    calendar: str
    def __init__(self, timeline: _Optional[str] = ..., tick: _Optional[int] = ..., calendar: _Optional[str] = ...) -> None: ...

class Pad(_message.Message):
    __slots__ = ("pleasure", "arousal", "dominance")
    PLEASURE_FIELD_NUMBER: _ClassVar[int]
    AROUSAL_FIELD_NUMBER: _ClassVar[int]
    DOMINANCE_FIELD_NUMBER: _ClassVar[int]
    pleasure: float
    arousal: float
    dominance: float
    def __init__(self, pleasure: _Optional[float] = ..., arousal: _Optional[float] = ..., dominance: _Optional[float] = ...) -> None: ...
