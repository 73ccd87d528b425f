from sidecar.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FinishReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINISH_REASON_UNSPECIFIED: _ClassVar[FinishReason]
    FINISH_REASON_STOP: _ClassVar[FinishReason]
    FINISH_REASON_LENGTH: _ClassVar[FinishReason]
FINISH_REASON_UNSPECIFIED: FinishReason
FINISH_REASON_STOP: FinishReason
FINISH_REASON_LENGTH: FinishReason

class NarrateInput(_message.Message):
    __slots__ = ("text", "entity_ids")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    text: str
    entity_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, text: _Optional[str] = ..., entity_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DialogueInput(_message.Message):
    __slots__ = ("speaker_id", "text")
    SPEAKER_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    speaker_id: str
    text: str
    def __init__(self, speaker_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ActionOption(_message.Message):
    __slots__ = ("action_id", "label", "target_id", "parameters_schema")
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    label: str
    target_id: str
    parameters_schema: str
    def __init__(self, action_id: _Optional[str] = ..., label: _Optional[str] = ..., target_id: _Optional[str] = ..., parameters_schema: _Optional[str] = ...) -> None: ...

class DecisionInput(_message.Message):
    __slots__ = ("situation", "options", "max_attempts")
    SITUATION_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    situation: str
    options: _containers.RepeatedCompositeFieldContainer[ActionOption]
    max_attempts: int
    def __init__(self, situation: _Optional[str] = ..., options: _Optional[_Iterable[_Union[ActionOption, _Mapping]]] = ..., max_attempts: _Optional[int] = ...) -> None: ...

class DescribeInput(_message.Message):
    __slots__ = ("entity_id", "aspect")
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    ASPECT_FIELD_NUMBER: _ClassVar[int]
    entity_id: str
    aspect: str
    def __init__(self, entity_id: _Optional[str] = ..., aspect: _Optional[str] = ...) -> None: ...

class ContinueInput(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GenerationLimits(_message.Message):
    __slots__ = ("max_output_tokens", "temperature", "first_token_timeout_ms", "total_timeout_ms", "stop_sequences")
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    FIRST_TOKEN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    max_output_tokens: int
    temperature: float
    first_token_timeout_ms: int
    total_timeout_ms: int
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_output_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., first_token_timeout_ms: _Optional[int] = ..., total_timeout_ms: _Optional[int] = ..., stop_sequences: _Optional[_Iterable[str]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("session_id", "actor_id", "narrate", "dialogue", "decision", "describe", "continue_story", "focus_ids", "moment", "min_revision", "profile", "limits", "run_id", "urgent", "budget_tokens", "seed")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    NARRATE_FIELD_NUMBER: _ClassVar[int]
    DIALOGUE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DESCRIBE_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_STORY_FIELD_NUMBER: _ClassVar[int]
    FOCUS_IDS_FIELD_NUMBER: _ClassVar[int]
    MOMENT_FIELD_NUMBER: _ClassVar[int]
    MIN_REVISION_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    URGENT_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    actor_id: str
    narrate: NarrateInput
    dialogue: DialogueInput
    decision: DecisionInput
    describe: DescribeInput
    continue_story: ContinueInput
    focus_ids: _containers.RepeatedScalarFieldContainer[str]
    moment: _types_pb2.GameMoment
    min_revision: int
    profile: str
    limits: GenerationLimits
    run_id: str
    urgent: bool
    budget_tokens: int
    seed: int
    def __init__(self, session_id: _Optional[str] = ..., actor_id: _Optional[str] = ..., narrate: _Optional[_Union[NarrateInput, _Mapping]] = ..., dialogue: _Optional[_Union[DialogueInput, _Mapping]] = ..., decision: _Optional[_Union[DecisionInput, _Mapping]] = ..., describe: _Optional[_Union[DescribeInput, _Mapping]] = ..., continue_story: _Optional[_Union[ContinueInput, _Mapping]] = ..., focus_ids: _Optional[_Iterable[str]] = ..., moment: _Optional[_Union[_types_pb2.GameMoment, _Mapping]] = ..., min_revision: _Optional[int] = ..., profile: _Optional[str] = ..., limits: _Optional[_Union[GenerationLimits, _Mapping]] = ..., run_id: _Optional[str] = ..., urgent: _Optional[bool] = ..., budget_tokens: _Optional[int] = ..., seed: _Optional[int] = ...) -> None: ...

class RunStarted(_message.Message):
    __slots__ = ("session_id", "actor_id", "profile", "model", "revision", "seed")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    actor_id: str
    profile: str
    model: str
    revision: int
    seed: int
    def __init__(self, session_id: _Optional[str] = ..., actor_id: _Optional[str] = ..., profile: _Optional[str] = ..., model: _Optional[str] = ..., revision: _Optional[int] = ..., seed: _Optional[int] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text", "sentence_end", "attempt", "mentions")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SENTENCE_END_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_FIELD_NUMBER: _ClassVar[int]
    text: str
    sentence_end: bool
    attempt: int
    mentions: _containers.RepeatedCompositeFieldContainer[EntityMention]
    def __init__(self, text: _Optional[str] = ..., sentence_end: _Optional[bool] = ..., attempt: _Optional[int] = ..., mentions: _Optional[_Iterable[_Union[EntityMention, _Mapping]]] = ...) -> None: ...

class EntityMention(_message.Message):
    __slots__ = ("entity_id", "start", "length")
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    entity_id: str
    start: int
    length: int
    def __init__(self, entity_id: _Optional[str] = ..., start: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class AttemptRejected(_message.Message):
    __slots__ = ("attempt", "reason")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    reason: str
    def __init__(self, attempt: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ChosenAction(_message.Message):
    __slots__ = ("action_id", "index", "message", "mentioned_ids", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MENTIONED_IDS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    index: int
    message: str
    mentioned_ids: _containers.RepeatedScalarFieldContainer[str]
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, action_id: _Optional[str] = ..., index: _Optional[int] = ..., message: _Optional[str] = ..., mentioned_ids: _Optional[_Iterable[str]] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class NotesUpdated(_message.Message):
    __slots__ = ("notes",)
    NOTES_FIELD_NUMBER: _ClassVar[int]
    notes: str
    def __init__(self, notes: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class Timings(_message.Message):
    __slots__ = ("queued_ms", "prompt_build_ms", "first_token_ms", "total_ms")
    QUEUED_MS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_BUILD_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_TOKEN_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    queued_ms: float
    prompt_build_ms: float
    first_token_ms: float
    total_ms: float
    def __init__(self, queued_ms: _Optional[float] = ..., prompt_build_ms: _Optional[float] = ..., first_token_ms: _Optional[float] = ..., total_ms: _Optional[float] = ...) -> None: ...

class RunFinished(_message.Message):
    __slots__ = ("finish_reason", "timings", "attempts", "transcript_unsaved")
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_UNSAVED_FIELD_NUMBER: _ClassVar[int]
    finish_reason: FinishReason
    timings: Timings
    attempts: int
    transcript_unsaved: bool
    def __init__(self, finish_reason: _Optional[_Union[FinishReason, str]] = ..., timings: _Optional[_Union[Timings, _Mapping]] = ..., attempts: _Optional[int] = ..., transcript_unsaved: _Optional[bool] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ("run_id", "seq", "started", "text", "rejected", "action", "notes", "usage", "finished")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    seq: int
    started: RunStarted
    text: TextDelta
    rejected: AttemptRejected
    action: ChosenAction
    notes: NotesUpdated
    usage: Usage
    finished: RunFinished
    def __init__(self, run_id: _Optional[str] = ..., seq: _Optional[int] = ..., started: _Optional[_Union[RunStarted, _Mapping]] = ..., text: _Optional[_Union[TextDelta, _Mapping]] = ..., rejected: _Optional[_Union[AttemptRejected, _Mapping]] = ..., action: _Optional[_Union[ChosenAction, _Mapping]] = ..., notes: _Optional[_Union[NotesUpdated, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., finished: _Optional[_Union[RunFinished, _Mapping]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: RunEvent
    def __init__(self, event: _Optional[_Union[RunEvent, _Mapping]] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelRunResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PreviewPromptRequest(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunRequest
    def __init__(self, run: _Optional[_Union[RunRequest, _Mapping]] = ...) -> None: ...

class PromptMessage(_message.Message):
    __slots__ = ("role", "content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class PromptSection(_message.Message):
    __slots__ = ("name", "tokens", "message_index", "trimmed", "dropped", "reason", "tier")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    name: str
    tokens: int
    message_index: int
    trimmed: bool
    dropped: bool
    reason: str
    tier: str
    def __init__(self, name: _Optional[str] = ..., tokens: _Optional[int] = ..., message_index: _Optional[int] = ..., trimmed: _Optional[bool] = ..., dropped: _Optional[bool] = ..., reason: _Optional[str] = ..., tier: _Optional[str] = ...) -> None: ...

class LeftOut(_message.Message):
    __slots__ = ("section", "kind", "count", "reason")
    SECTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    section: str
    kind: str
    count: int
    reason: str
    def __init__(self, section: _Optional[str] = ..., kind: _Optional[str] = ..., count: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class PreviewPromptResponse(_message.Message):
    __slots__ = ("messages", "sections", "budget_tokens", "prompt_tokens", "model", "revision", "left_out")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[PromptMessage]
    sections: _containers.RepeatedCompositeFieldContainer[PromptSection]
    budget_tokens: int
    prompt_tokens: int
    model: str
    revision: int
    left_out: _containers.RepeatedCompositeFieldContainer[LeftOut]
    def __init__(self, messages: _Optional[_Iterable[_Union[PromptMessage, _Mapping]]] = ..., sections: _Optional[_Iterable[_Union[PromptSection, _Mapping]]] = ..., budget_tokens: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., model: _Optional[str] = ..., revision: _Optional[int] = ..., left_out: _Optional[_Iterable[_Union[LeftOut, _Mapping]]] = ...) -> None: ...

class ReadTranscriptRequest(_message.Message):
    __slots__ = ("session_id", "actor_id", "page_size", "cursor", "include_model_text")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_MODEL_TEXT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    actor_id: str
    page_size: int
    cursor: str
    include_model_text: bool
    def __init__(self, session_id: _Optional[str] = ..., actor_id: _Optional[str] = ..., page_size: _Optional[int] = ..., cursor: _Optional[str] = ..., include_model_text: _Optional[bool] = ...) -> None: ...

class TranscriptEntry(_message.Message):
    __slots__ = ("index", "role", "speaker_id", "text", "interrupted", "run_id", "unix_ms", "mentions", "model_text")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_TEXT_FIELD_NUMBER: _ClassVar[int]
    index: int
    role: str
    speaker_id: str
    text: str
    interrupted: bool
    run_id: str
    unix_ms: int
    mentions: _containers.RepeatedCompositeFieldContainer[EntityMention]
    model_text: str
    def __init__(self, index: _Optional[int] = ..., role: _Optional[str] = ..., speaker_id: _Optional[str] = ..., text: _Optional[str] = ..., interrupted: _Optional[bool] = ..., run_id: _Optional[str] = ..., unix_ms: _Optional[int] = ..., mentions: _Optional[_Iterable[_Union[EntityMention, _Mapping]]] = ..., model_text: _Optional[str] = ...) -> None: ...

class ReadTranscriptResponse(_message.Message):
    __slots__ = ("entries", "next_cursor", "total", "summary", "summary_mentions", "first_index", "summary_model_text")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_MENTIONS_FIELD_NUMBER: _ClassVar[int]
    FIRST_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_MODEL_TEXT_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TranscriptEntry]
    next_cursor: str
    total: int
    summary: str
    summary_mentions: _containers.RepeatedCompositeFieldContainer[EntityMention]
    first_index: int
    summary_model_text: str
    def __init__(self, entries: _Optional[_Iterable[_Union[TranscriptEntry, _Mapping]]] = ..., next_cursor: _Optional[str] = ..., total: _Optional[int] = ..., summary: _Optional[str] = ..., summary_mentions: _Optional[_Iterable[_Union[EntityMention, _Mapping]]] = ..., first_index: _Optional[int] = ..., summary_model_text: _Optional[str] = ...) -> None: ...
