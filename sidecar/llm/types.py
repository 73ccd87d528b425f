"""What a model call takes and yields, independent of litellm's own types."""

from __future__ import annotations

import msgspec

__all__ = ["Limits", "TextPiece", "Completion", "Chunk"]


class Limits(msgspec.Struct, frozen=True):
    """Per-run overrides of a profile's defaults (0 / None = the profile's)."""

    max_output_tokens: int = 0
    temperature: float | None = None
    first_token_timeout_s: float = 0.0
    #: Seconds for the whole call, already the smaller of the request's and the gRPC deadline.
    total_timeout_s: float = 0.0
    stop: tuple[str, ...] = ()


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
    #: The profile that served it (after fallbacks) and its model string.
    profile: str = ""
    model: str = ""


class Chunk(msgspec.Struct):
    """One streamed piece from any transport, in the one shape `sidecar.llm.stream`
    reads: each transport (litellm, sse, the embedded and scripted models) turns its
    own chunks into these, so retries, timeouts, usage and cost are one code path."""

    text: str = ""
    #: "stop", "length"... on the chunk that ends the reply; None before.
    finish: str | None = None
    #: (prompt, completion, cached) tokens, on the chunk that carries usage.
    usage: tuple[int, int, int] | None = None
