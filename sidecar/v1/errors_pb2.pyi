from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_REASON_UNSPECIFIED: _ClassVar[ErrorReason]
    ERROR_REASON_UNAUTHENTICATED: _ClassVar[ErrorReason]
    ERROR_REASON_SESSION_NOT_FOUND: _ClassVar[ErrorReason]
    ERROR_REASON_STALE_REVISION: _ClassVar[ErrorReason]
    ERROR_REASON_INVALID_DELTA: _ClassVar[ErrorReason]
    ERROR_REASON_UNKNOWN_ENTITY: _ClassVar[ErrorReason]
    ERROR_REASON_LIMIT_EXCEEDED: _ClassVar[ErrorReason]
    ERROR_REASON_REVISION_NOT_REACHED: _ClassVar[ErrorReason]
    ERROR_REASON_INVALID_BLOB: _ClassVar[ErrorReason]
    ERROR_REASON_RUN_NOT_FOUND: _ClassVar[ErrorReason]
    ERROR_REASON_QUEUE_FULL: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_TIMEOUT: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_RATE_LIMITED: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_UNAVAILABLE: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_ERROR: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_AUTH: _ClassVar[ErrorReason]
    ERROR_REASON_PROVIDER_BAD_REQUEST: _ClassVar[ErrorReason]
    ERROR_REASON_CONTEXT_WINDOW_EXCEEDED: _ClassVar[ErrorReason]
    ERROR_REASON_CONTENT_FILTERED: _ClassVar[ErrorReason]
    ERROR_REASON_INVALID_CHOICE: _ClassVar[ErrorReason]
    ERROR_REASON_PRIVACY_LEAK_BLOCKED: _ClassVar[ErrorReason]
    ERROR_REASON_PROFILE_NOT_FOUND: _ClassVar[ErrorReason]
    ERROR_REASON_SHUTTING_DOWN: _ClassVar[ErrorReason]
    ERROR_REASON_INVALID_REQUEST: _ClassVar[ErrorReason]
    ERROR_REASON_RUN_CANCELLED: _ClassVar[ErrorReason]
    ERROR_REASON_INVALID_CURSOR: _ClassVar[ErrorReason]
    ERROR_REASON_SESSION_EXISTS: _ClassVar[ErrorReason]
    ERROR_REASON_MODEL_UNAVAILABLE: _ClassVar[ErrorReason]
    ERROR_REASON_INTERNAL: _ClassVar[ErrorReason]
    ERROR_REASON_MODEL_NOT_INSTALLED: _ClassVar[ErrorReason]
    ERROR_REASON_STORAGE_FULL: _ClassVar[ErrorReason]
    ERROR_REASON_SIDECAR_GONE: _ClassVar[ErrorReason]
    ERROR_REASON_DELTA_ID_REUSED: _ClassVar[ErrorReason]
    ERROR_REASON_WRITE_KEPT: _ClassVar[ErrorReason]
    ERROR_REASON_WRITE_NOT_APPLIED: _ClassVar[ErrorReason]
ERROR_REASON_UNSPECIFIED: ErrorReason
ERROR_REASON_UNAUTHENTICATED: ErrorReason
ERROR_REASON_SESSION_NOT_FOUND: ErrorReason
ERROR_REASON_STALE_REVISION: ErrorReason
ERROR_REASON_INVALID_DELTA: ErrorReason
ERROR_REASON_UNKNOWN_ENTITY: ErrorReason
ERROR_REASON_LIMIT_EXCEEDED: ErrorReason
ERROR_REASON_REVISION_NOT_REACHED: ErrorReason
ERROR_REASON_INVALID_BLOB: ErrorReason
ERROR_REASON_RUN_NOT_FOUND: ErrorReason
ERROR_REASON_QUEUE_FULL: ErrorReason
ERROR_REASON_PROVIDER_TIMEOUT: ErrorReason
ERROR_REASON_PROVIDER_RATE_LIMITED: ErrorReason
ERROR_REASON_PROVIDER_UNAVAILABLE: ErrorReason
ERROR_REASON_PROVIDER_ERROR: ErrorReason
ERROR_REASON_PROVIDER_AUTH: ErrorReason
ERROR_REASON_PROVIDER_BAD_REQUEST: ErrorReason
ERROR_REASON_CONTEXT_WINDOW_EXCEEDED: ErrorReason
ERROR_REASON_CONTENT_FILTERED: ErrorReason
ERROR_REASON_INVALID_CHOICE: ErrorReason
ERROR_REASON_PRIVACY_LEAK_BLOCKED: ErrorReason
ERROR_REASON_PROFILE_NOT_FOUND: ErrorReason
ERROR_REASON_SHUTTING_DOWN: ErrorReason
ERROR_REASON_INVALID_REQUEST: ErrorReason
ERROR_REASON_RUN_CANCELLED: ErrorReason
ERROR_REASON_INVALID_CURSOR: ErrorReason
ERROR_REASON_SESSION_EXISTS: ErrorReason
ERROR_REASON_MODEL_UNAVAILABLE: ErrorReason
ERROR_REASON_INTERNAL: ErrorReason
ERROR_REASON_MODEL_NOT_INSTALLED: ErrorReason
ERROR_REASON_STORAGE_FULL: ErrorReason
ERROR_REASON_SIDECAR_GONE: ErrorReason
ERROR_REASON_DELTA_ID_REUSED: ErrorReason
ERROR_REASON_WRITE_KEPT: ErrorReason
ERROR_REASON_WRITE_NOT_APPLIED: ErrorReason
RETRYABLE_FIELD_NUMBER: _ClassVar[int]
retryable: _descriptor.FieldDescriptor

class ErrorDetail(_message.Message):
    __slots__ = ("code", "reason", "message", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    code: int
    reason: str
    message: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...
