from sidecar.v1 import errors_pb2 as _errors_pb2
from sidecar.v1 import state_pb2 as _state_pb2
from sidecar.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AliasMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALIAS_MODE_UNSPECIFIED: _ClassVar[AliasMode]
    ALIAS_MODE_KIND: _ClassVar[AliasMode]
    ALIAS_MODE_DISPLAY_NAME: _ClassVar[AliasMode]
ALIAS_MODE_UNSPECIFIED: AliasMode
ALIAS_MODE_KIND: AliasMode
ALIAS_MODE_DISPLAY_NAME: AliasMode

class MomentExposure(_message.Message):
    __slots__ = ("timeline", "tick", "calendar")
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    TICK_FIELD_NUMBER: _ClassVar[int]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    timeline: bool
    tick: bool
    calendar: bool
    def __init__(self, timeline: _Optional[bool] = ..., tick: _Optional[bool] = ..., calendar: _Optional[bool] = ...) -> None: ...

class SessionOptions(_message.Message):
    __slots__ = ("alias_mode", "expose_moment", "coordinate_fields", "exposed_coordinate_fields", "budget_tokens", "profile", "memory_bank")
    ALIAS_MODE_FIELD_NUMBER: _ClassVar[int]
    EXPOSE_MOMENT_FIELD_NUMBER: _ClassVar[int]
    COORDINATE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_COORDINATE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANK_FIELD_NUMBER: _ClassVar[int]
    alias_mode: AliasMode
    expose_moment: MomentExposure
    coordinate_fields: _containers.RepeatedScalarFieldContainer[str]
    exposed_coordinate_fields: _containers.RepeatedScalarFieldContainer[str]
    budget_tokens: int
    profile: str
    memory_bank: bool
    def __init__(self, alias_mode: _Optional[_Union[AliasMode, str]] = ..., expose_moment: _Optional[_Union[MomentExposure, _Mapping]] = ..., coordinate_fields: _Optional[_Iterable[str]] = ..., exposed_coordinate_fields: _Optional[_Iterable[str]] = ..., budget_tokens: _Optional[int] = ..., profile: _Optional[str] = ..., memory_bank: _Optional[bool] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("session_id", "options", "update_options")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    options: SessionOptions
    update_options: bool
    def __init__(self, session_id: _Optional[str] = ..., options: _Optional[_Union[SessionOptions, _Mapping]] = ..., update_options: _Optional[bool] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session_id", "revision", "created", "options")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    revision: int
    created: bool
    options: SessionOptions
    def __init__(self, session_id: _Optional[str] = ..., revision: _Optional[int] = ..., created: _Optional[bool] = ..., options: _Optional[_Union[SessionOptions, _Mapping]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ("cancelled_runs",)
    CANCELLED_RUNS_FIELD_NUMBER: _ClassVar[int]
    cancelled_runs: int
    def __init__(self, cancelled_runs: _Optional[int] = ...) -> None: ...

class ApplyDeltasRequest(_message.Message):
    __slots__ = ("session_id", "base_revision", "delta_id", "ops")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_REVISION_FIELD_NUMBER: _ClassVar[int]
    DELTA_ID_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    base_revision: int
    delta_id: str
    ops: _containers.RepeatedCompositeFieldContainer[_state_pb2.DeltaOp]
    def __init__(self, session_id: _Optional[str] = ..., base_revision: _Optional[int] = ..., delta_id: _Optional[str] = ..., ops: _Optional[_Iterable[_Union[_state_pb2.DeltaOp, _Mapping]]] = ...) -> None: ...

class ApplyDeltasResponse(_message.Message):
    __slots__ = ("revision", "replayed")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    revision: int
    replayed: bool
    def __init__(self, revision: _Optional[int] = ..., replayed: _Optional[bool] = ...) -> None: ...

class StreamDeltasRequest(_message.Message):
    __slots__ = ("session_id", "base_revision", "delta_id", "ops")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_REVISION_FIELD_NUMBER: _ClassVar[int]
    DELTA_ID_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    base_revision: int
    delta_id: str
    ops: _containers.RepeatedCompositeFieldContainer[_state_pb2.DeltaOp]
    def __init__(self, session_id: _Optional[str] = ..., base_revision: _Optional[int] = ..., delta_id: _Optional[str] = ..., ops: _Optional[_Iterable[_Union[_state_pb2.DeltaOp, _Mapping]]] = ...) -> None: ...

class StreamDeltasResponse(_message.Message):
    __slots__ = ("delta_id", "revision", "replayed", "error")
    DELTA_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    delta_id: str
    revision: int
    replayed: bool
    error: _errors_pb2.ErrorDetail
    def __init__(self, delta_id: _Optional[str] = ..., revision: _Optional[int] = ..., replayed: _Optional[bool] = ..., error: _Optional[_Union[_errors_pb2.ErrorDetail, _Mapping]] = ...) -> None: ...

class ReplaceStateRequest(_message.Message):
    __slots__ = ("session_id", "snapshot", "revision", "allow_rewind")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ALLOW_REWIND_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    snapshot: _state_pb2.Snapshot
    revision: int
    allow_rewind: bool
    def __init__(self, session_id: _Optional[str] = ..., snapshot: _Optional[_Union[_state_pb2.Snapshot, _Mapping]] = ..., revision: _Optional[int] = ..., allow_rewind: _Optional[bool] = ...) -> None: ...

class ReplaceStateResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class GetStateRequest(_message.Message):
    __slots__ = ("session_id", "kinds", "entity_ids")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    kinds: _containers.RepeatedScalarFieldContainer[_types_pb2.EntityKind]
    entity_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_id: _Optional[str] = ..., kinds: _Optional[_Iterable[_Union[_types_pb2.EntityKind, str]]] = ..., entity_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetStateResponse(_message.Message):
    __slots__ = ("revision", "snapshot")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    revision: int
    snapshot: _state_pb2.Snapshot
    def __init__(self, revision: _Optional[int] = ..., snapshot: _Optional[_Union[_state_pb2.Snapshot, _Mapping]] = ...) -> None: ...

class ExportSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ExportSessionResponse(_message.Message):
    __slots__ = ("blob", "format_version", "revision")
    BLOB_FIELD_NUMBER: _ClassVar[int]
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    blob: bytes
    format_version: int
    revision: int
    def __init__(self, blob: _Optional[bytes] = ..., format_version: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class ImportSessionRequest(_message.Message):
    __slots__ = ("session_id", "blob", "overwrite")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    OVERWRITE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    blob: bytes
    overwrite: bool
    def __init__(self, session_id: _Optional[str] = ..., blob: _Optional[bytes] = ..., overwrite: _Optional[bool] = ...) -> None: ...

class ImportSessionResponse(_message.Message):
    __slots__ = ("session_id", "revision")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    revision: int
    def __init__(self, session_id: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class ReplaceStateChunkedRequest(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ReplaceStateChunkedResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class ImportSessionChunkedRequest(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ImportSessionChunkedResponse(_message.Message):
    __slots__ = ("session_id", "revision")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    revision: int
    def __init__(self, session_id: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...
