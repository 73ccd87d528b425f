"""Models: the only package that imports litellm, and only when a profile needs it.

A pure model boundary: a `ModelRequest` in (messages, sampling limits, the
resolved profile and route), a stream of pieces out (`TextPiece`s, then one
`Completion` with usage and cost), every failure mapped to a SidecarError.
Nothing here knows runs, decisions or prompts (sidecar/runs/ does, and calls
down; tests/test_layering.py keeps it so).

`ModelGateway` is the door: profiles and their routes (sidecar/llm/routes.py),
tokenizers, budgets, and `open()`/`stream()` for one call (sidecar/llm/call.py).
The embedded local model, the scripted fake and OpenAI-compatible servers (the
sse transport) are called directly; litellm serves the profiles on its transport.
"""

from sidecar.llm.coalesce import Coalescer, TextChunk
from sidecar.llm.faults import map_exception
from sidecar.llm.gateway import DEFAULT_CONTEXT_WINDOW, ModelGateway
from sidecar.llm.types import Completion, Limits, ModelRequest, ModelTarget, TextPiece

__all__ = [
    "ModelGateway",
    "DEFAULT_CONTEXT_WINDOW",
    "Limits",
    "ModelRequest",
    "ModelTarget",
    "TextPiece",
    "Completion",
    "Coalescer",
    "TextChunk",
    "map_exception",
]
