"""Models: the only package that imports litellm (lazily, in the background).

`ModelGateway` is the door: profiles, tokenizers, budgets, and `stream()` for
one reply with retries, fallbacks and every litellm error mapped. The embedded
local model and the scripted fake are litellm custom providers registered here.
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
