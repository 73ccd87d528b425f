"""Helpers for context-engine tests: a real tokenizer, an engine, `prepare`.
The sessions come from tests/world.py (`anchor_tavern`)."""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from sidecar.config import Config
from sidecar.context import ContextEngine
from sidecar.context.contract import RunSpec
from sidecar.state.model import Session


@functools.cache
def tiktoken_counter():
    """cl100k_base through tiktoken, from the copy litellm ships (no network)."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin
    bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def count_messages(messages: list[dict[str, str]]) -> int:
    from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING

    count = tiktoken_counter()
    return sum(count(m["content"]) for m in messages) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING


def engine(templates_dir: str = "", lore_dir: str = "") -> ContextEngine:
    cfg = Config()
    cfg.context.templates_dir = templates_dir
    cfg.context.lore_dir = lore_dir
    return ContextEngine(cfg)


def prepare(eng: ContextEngine, session: Session, spec: RunSpec, budget: int = 4000, **kw):
    return eng.prepare(session, spec, count_tokens=tiktoken_counter(), budget_tokens=budget, **kw)


def all_text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)
