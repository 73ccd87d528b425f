"""What a model call takes and yields, independent of litellm's own types.

A call is a `ModelRequest` (messages, sampling limits, the resolved profile and
route, what the leak guard refuses); it yields `TextPiece`s and one `Completion`.
"""

from __future__ import annotations

import msgspec

from sidecar.config import ModelProfile
from sidecar.idsearch import Mask
from sidecar.llm.routes import Route
from sidecar.state.model import Moment

__all__ = ["Sampling", "ReplyShape", "Limits", "ModelTarget", "ModelRequest", "TextPiece", "Completion", "Chunk"]


class Limits(msgspec.Struct, frozen=True):
    """Per-run overrides of a profile's defaults (0 / None = the profile's)."""

    max_output_tokens: int = 0
    temperature: float | None = None
    first_token_timeout_s: float = 0.0
    #: Seconds for the whole call, already the smaller of the request's and the gRPC deadline.
    total_timeout_s: float = 0.0
    stop: tuple[str, ...] = ()


#: A profile's defaults: those of `Sampling` below (one place to change them).
_PROFILE = ModelProfile(model="")


class Sampling(msgspec.Struct, frozen=True):
    """How the embedded model draws each token (a profile's settings: docs/runs.md)."""

    temperature: float = _PROFILE.temperature
    top_k: int = _PROFILE.top_k
    top_p: float = 1.0
    min_p: float = _PROFILE.min_p
    repeat_penalty: float = _PROFILE.repeat_penalty
    #: Tokens the repeat penalty looks back over.
    repeat_last_n: int = 64


class ReplyShape(msgspec.Struct, frozen=True):
    """What a reply must look like, for a model that is held to it by a grammar
    (the embedded model: sidecar/llm/grammars.py); providers get the chat's own words.

    "prose": one to three sentences (narrate, describe, continue); "line": one spoken
    line of the actor (dialogue); "decision": one of `n_options` numbered options, with
    a line and notes."""

    kind: str = "prose"
    n_options: int = 0
    #: A decision's parameters per option: the JSON Schema of the reply's "parameters"
    #: as the model writes them (sidecar/context/action_params.model_schema), "" = none.
    option_params: tuple[str, ...] = ()


class ModelTarget(msgspec.Struct, frozen=True):
    """A profile resolved for calling (`ModelGateway.target`): its name, its
    settings and how it is served."""

    name: str
    profile: ModelProfile
    route: Route


class ModelRequest(msgspec.Struct, frozen=True):
    """One model call, everything resolved: where it goes, what it says, its limits."""

    target: ModelTarget
    #: OpenAI-style chat messages, already projected (aliases, never an engine ID).
    messages: list[dict[str, str]]
    limits: Limits = msgspec.field(default_factory=Limits)
    #: The leak guard refuses a request holding any of these...
    engine_ids: frozenset[str] = frozenset()
    #: ...or a suppressed part of the game moment (None: no moment).
    guard_moment: Moment | None = None
    #: The session's issued aliases: an engine ID's text inside one is not a leak.
    aliases: Mask | None = None
    #: The reply's shape (None: free text, as before).
    shape: ReplyShape | None = None
    #: The sampling seed (0: the model's own; the embedded model's replies repeat under one).
    seed: int = 0


class TextPiece(msgspec.Struct):
    """A piece of reply text as the provider streamed it (not yet coalesced)."""

    text: str


class Completion(msgspec.Struct):
    """The last item of every successful stream."""

    #: "stop" or "length".
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    #: Milliseconds the request waited for the model before it began (the embedded model).
    queued_ms: float = 0.0
    #: The profile that served it (after fallbacks) and its model string.
    profile: str = ""
    model: str = ""


class Chunk(msgspec.Struct):
    """One streamed piece from any transport, in the one shape `sidecar.llm.call`
    reads: each transport (litellm, sse, the embedded and scripted models) turns its
    own chunks into these, so timeouts, usage, cost (and the runs' retries) are one code path."""

    text: str = ""
    #: "stop", "length"... on the chunk that ends the reply; None before.
    finish: str | None = None
    #: (prompt, completion, cached) tokens, on the chunk that carries usage.
    usage: tuple[int, int, int] | None = None
    #: Milliseconds the request waited for the model before it began (the embedded
    #: model's turns: sidecar/llm/turns.py), on the chunk that carries usage; 0 for providers.
    queued_ms: float = 0.0
