"""The contract between a run (`sidecar.runs`) and the context engine.

A run asks `ContextEngine.prepare(session, spec, ...)` for a PreparedRun: the
exact, already-projected messages (aliases only, never an engine ID) and the
budget report; then feeds it the model's reply to accept or reject (decisions),
asks `sidecar.context.retry.retry_messages` for the next attempt after a
rejection, and tells it what to record. Domain types only: no grpc, no
generated code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import msgspec

from sidecar.idsearch import Mask
from sidecar.projection.dealias import Dealiaser
from sidecar.state.model import Moment


class NarrateInput(msgspec.Struct, frozen=True, tag="narrate"):
    text: str
    entity_ids: tuple[str, ...] = ()


class DialogueInput(msgspec.Struct, frozen=True, tag="dialogue"):
    text: str
    #: Engine ID of who speaks ("" = the session's player entity).
    speaker_id: str = ""


class ParamSpec(msgspec.Struct, frozen=True):
    """One parameter an action takes (sidecar/context/action_params.py reads the schema)."""

    name: str
    #: "enum", "integer", "string" or "entity".
    kind: str
    description: str = ""
    required: bool = True
    #: An enum's values, as the game wrote them (integers in decimal).
    values: tuple[str, ...] = ()
    minimum: int = 0
    maximum: int = 0
    #: A string's pattern (anchored) and length bound.
    pattern: str = ""
    max_length: int = 80
    #: An entity parameter's kind, or "any".
    entity_kind: str = ""


class ActionOption(msgspec.Struct, frozen=True):
    action_id: str
    label: str
    target_id: str = ""
    #: What the actor fills in when it takes this action.
    parameters: tuple[ParamSpec, ...] = ()


class DecisionInput(msgspec.Struct, frozen=True, tag="decision"):
    situation: str
    options: tuple[ActionOption, ...]
    #: 0: the configured default.
    max_attempts: int = 0


class DescribeInput(msgspec.Struct, frozen=True, tag="describe"):
    entity_id: str
    aspect: str = ""


class ContinueInput(msgspec.Struct, frozen=True, tag="continue"):
    """Carry the story on from the actor's last reply (seed 003's Continue action)."""


RunInput = NarrateInput | DialogueInput | DecisionInput | DescribeInput | ContinueInput


class RunSpec(msgspec.Struct, frozen=True):
    """What the game asked for, in engine IDs (validated against the session)."""

    session_id: str
    actor_id: str
    input: RunInput
    focus_ids: tuple[str, ...] = ()
    moment: Moment | None = None
    #: Token budget for the prompt; 0 = from session options, config, model window.
    budget_tokens: int = 0
    run_id: str = ""


class PromptSection(msgspec.Struct):
    name: str
    tokens: int
    message_index: int
    tier: str = "required"
    trimmed: bool = False
    dropped: bool = False
    reason: str = ""


class LeftOut(msgspec.Struct):
    """Something selected for a prompt that the prompt does not hold, and why."""

    #: The section it would have gone to: "history", "memory", "lore", "setting", or a
    #: required part's name ("scene", "story_summary"...).
    section: str
    #: "transcript_entry", "world_event", "memory", "lore_card", "character", "item";
    #: for a required part the budget cut: "line", "words" or "section".
    kind: str
    count: int
    reason: str


class Prompt(msgspec.Struct):
    #: OpenAI-style chat messages: {"role": ..., "content": ...}.
    messages: list[dict[str, str]]
    sections: list[PromptSection]
    budget_tokens: int
    #: Every token sent: the messages, their role markers and the model's prompt format.
    prompt_tokens: int
    left_out: list[LeftOut] = msgspec.field(default_factory=list)


class Chosen(msgspec.Struct, frozen=True):
    """A decision reply that was accepted; IDs are engine IDs again."""

    action_id: str
    index: int
    message: str = ""
    mentioned_ids: tuple[str, ...] = ()
    #: The option's parameters as the game gets them: (name, value), an entity's as its engine ID.
    parameters: tuple[tuple[str, str], ...] = ()


class Accepted(msgspec.Struct, frozen=True):
    action: Chosen | None = None
    #: New notes when the reply carried them (already collapsed and cut).
    notes: str | None = None


class Rejected(msgspec.Struct, frozen=True):
    #: Why, as model-bound text (projected: an engine ID the model wrote is its alias).
    reason: str
    #: The rejected reply, projected the same way (`sidecar.context.retry` shows it to
    #: the model again with the reason).
    reply: str


#: Counts tokens of a text with the serving model's tokenizer.
TokenCounter = Callable[[str], int]


class PreparedRun(Protocol):
    prompt: Prompt
    #: Every engine ID of the session: the leak guard refuses a request holding any.
    engine_ids: frozenset[str]
    #: The parts of the run's game moment that must not reach the model (None: no moment).
    guard_moment: Moment | None
    #: The session's issued aliases: the guard does not count an engine ID's text inside one.
    aliases: Mask

    def evaluate(self, reply: str, attempt: int) -> Accepted | Rejected:
        """Judge a complete reply. Non-decision inputs always accept."""
        ...

    def dealiaser(self) -> Dealiaser:
        """A fresh streaming alias-to-display-name replacer for one reply's text."""
        ...

    def parameter_schemas(self) -> tuple[str, ...]:
        """A decision's per-option JSON Schema of "parameters" as the model writes them
        ("" = none; () when no option has any)."""
        ...

    def model_text(self, text: str) -> str:
        """Game text that goes into a model request outside the prompt, as this run's
        prompt shows it: engine IDs as aliases."""
        ...

    def stop_sequences(self, stops: tuple[str, ...]) -> tuple[str, ...]:
        """The stop sequences as the model would write them (`model_text`), leaving out
        each one that names an entity the actor cannot perceive: it would read as a
        generic word ("someone") and stop the reply at the first one the model writes."""
        ...

    def record(self, reply: str, *, interrupted: bool, run_id: str) -> None:
        """Append the input and the reply to the session's transcripts and notes."""
        ...
