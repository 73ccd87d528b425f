"""Models: the only package that imports litellm, and only when a profile needs it.

`ModelGateway` is the door: profiles and their routes (sidecar/llm/routes.py),
tokenizers, budgets, and `stream()` for one reply with retries, fallbacks and
every failure mapped. The embedded local model, the scripted fake and
OpenAI-compatible servers (the sse transport) are called directly; litellm
serves the profiles on its transport.
"""

from sidecar.llm.coalesce import Coalescer, TextChunk
from sidecar.llm.faults import map_exception
from sidecar.llm.gateway import DEFAULT_CONTEXT_WINDOW, ModelGateway
from sidecar.llm.types import Completion, Limits, TextPiece

__all__ = [
    "ModelGateway",
    "DEFAULT_CONTEXT_WINDOW",
    "Limits",
    "TextPiece",
    "Completion",
    "Coalescer",
    "TextChunk",
    "map_exception",
]
