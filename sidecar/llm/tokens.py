"""Token counting without litellm and without a network: tiktoken's cl100k_base
built from the copy of its vocabulary that litellm ships.

`tiktoken.get_encoding` downloads a vocabulary it does not find in its cache,
and a player's machine has no business doing that: the file is read here by
path, checked against the published hash, and handed to tiktoken directly.
Without it (litellm not installed, or a damaged file) counts are estimated at
4 bytes a token, and a warning says so.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import importlib
import importlib.util
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cl100k_counter", "shared_cl100k", "cl100k_built", "bundled_cl100k", "approximate_count"]

log = logging.getLogger("sidecar.llm")

#: tiktoken's cache key is the SHA-1 of this URL; litellm ships the file under that name.
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's split pattern and special tokens (tiktoken_ext.openai_public; frozen).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def bundled_cl100k() -> Path | None:
    """litellm's copy of the cl100k_base vocabulary, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "litellm_core_utils" / "tokenizers" / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    return path if path.is_file() else None


def approximate_count(text: str) -> int:
    """About 4 bytes of English a token: the estimate when no vocabulary is at hand."""
    return (len(text.encode("utf-8")) + 3) // 4


def cl100k_counter(path: Path | None = None) -> Callable[[str], int]:
    """A cl100k_base token counter read from `path` (default: litellm's copy); never
    downloads. Falls back to `approximate_count` when the file is missing or damaged."""
    path = path or bundled_cl100k()
    data = path.read_bytes() if path is not None else b""
    if not data or hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
        log.warning(
            "cl100k_base vocabulary not found; token counts are estimated",
            extra={"fields": {"path": str(path or "")}},
        )
        return approximate_count
    # "<base64 token> <rank>" per line; built with C-level maps (about 40% faster than a loop).
    parts = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2]), strict=True))
    del parts, data
    core = _core_bpe(ranks)
    if core is not None:
        del ranks  # tiktoken.Encoding would keep it: a second copy (~15 MB) nothing reads
        return lambda text: len(core.encode_ordinary(text))
    import tiktoken

    enc = tiktoken.Encoding(
        name="cl100k_base", pat_str=_CL100K_PAT, mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL
    )
    return lambda text: len(enc.encode(text, disallowed_special=()))


def _core_bpe(ranks: dict[bytes, int]) -> Any:
    """tiktoken's encoder core, or None for a tiktoken whose core differs."""
    try:
        core = importlib.import_module("tiktoken._tiktoken")
        return core.CoreBPE(ranks, _CL100K_SPECIAL, _CL100K_PAT)
    except (ImportError, AttributeError, TypeError):
        return None


def shared_cl100k() -> Callable[[str], int]:
    """The process's one cl100k_base counter (building it costs ~0.2 s of CPU and
    ~26 MB), cached per text. Built once, whichever thread asks first."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = functools.lru_cache(maxsize=8192)(cl100k_counter())
        return _shared


_lock = threading.Lock()
_shared: Callable[[str], int] | None = None


def cl100k_built() -> bool:
    """Whether `shared_cl100k()` returns at once."""
    return _shared is not None
