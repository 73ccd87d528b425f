from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetInfoRequest(_message.Message):
    __slots__ = ("include_stats",)
    INCLUDE_STATS_FIELD_NUMBER: _ClassVar[int]
    include_stats: bool
    def __init__(self, include_stats: _Optional[bool] = ...) -> None: ...

class ModelProfileInfo(_message.Message):
    __slots__ = ("name", "model", "is_default", "local", "context_window", "ready", "unavailable_reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    model: str
    is_default: bool
    local: bool
    context_window: int
    ready: bool
    unavailable_reason: str
    def __init__(self, name: _Optional[str] = ..., model: _Optional[str] = ..., is_default: _Optional[bool] = ..., local: _Optional[bool] = ..., context_window: _Optional[int] = ..., ready: _Optional[bool] = ..., unavailable_reason: _Optional[str] = ...) -> None: ...

class LocalModelInfo(_message.Message):
    __slots__ = ("runtime_found", "weights_found", "weights_source", "weights_path", "problem")
    RUNTIME_FOUND_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FOUND_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_PATH_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    runtime_found: bool
    weights_found: bool
    weights_source: str
    weights_path: str
    problem: str
    def __init__(self, runtime_found: _Optional[bool] = ..., weights_found: _Optional[bool] = ..., weights_source: _Optional[str] = ..., weights_path: _Optional[str] = ..., problem: _Optional[str] = ...) -> None: ...

class SessionStats(_message.Message):
    __slots__ = ("session_id", "revision", "runs", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd", "errors_by_reason", "summaries", "summary_prompt_tokens", "summary_completion_tokens", "summary_cost_usd")
    class ErrorsByReasonEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    ERRORS_BY_REASON_FIELD_NUMBER: _ClassVar[int]
    SUMMARIES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COST_USD_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    revision: int
    runs: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    errors_by_reason: _containers.ScalarMap[str, int]
    summaries: int
    summary_prompt_tokens: int
    summary_completion_tokens: int
    summary_cost_usd: float
    def __init__(self, session_id: _Optional[str] = ..., revision: _Optional[int] = ..., runs: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ..., errors_by_reason: _Optional[_Mapping[str, int]] = ..., summaries: _Optional[int] = ..., summary_prompt_tokens: _Optional[int] = ..., summary_completion_tokens: _Optional[int] = ..., summary_cost_usd: _Optional[float] = ...) -> None: ...

class GetInfoResponse(_message.Message):
    __slots__ = ("version", "protocol_versions", "capabilities", "profiles", "llm_ready", "pid", "stats", "durable", "local_model")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    LLM_READY_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    version: str
    protocol_versions: _containers.RepeatedScalarFieldContainer[int]
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    profiles: _containers.RepeatedCompositeFieldContainer[ModelProfileInfo]
    llm_ready: bool
    pid: int
    stats: _containers.RepeatedCompositeFieldContainer[SessionStats]
    durable: bool
    local_model: LocalModelInfo
    def __init__(self, version: _Optional[str] = ..., protocol_versions: _Optional[_Iterable[int]] = ..., capabilities: _Optional[_Iterable[str]] = ..., profiles: _Optional[_Iterable[_Union[ModelProfileInfo, _Mapping]]] = ..., llm_ready: _Optional[bool] = ..., pid: _Optional[int] = ..., stats: _Optional[_Iterable[_Union[SessionStats, _Mapping]]] = ..., durable: _Optional[bool] = ..., local_model: _Optional[_Union[LocalModelInfo, _Mapping]] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
