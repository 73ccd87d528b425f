"""What a generation and the embedded model's worker (sidecar/llm/turns.py) say to each
other: the work a step asks for, the steps themselves, the model's side (`Host`) and
the worker's record of one generation (`Turn`)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Generator
from typing import Any, NamedTuple, Protocol

__all__ = ["Host", "Steps", "Turn", "TurnsClosed", "Work"]


class Work(NamedTuple):
    """Tokens to evaluate into sequence `seq` from position `pos`; the last one's logits
    are wanted. The worker answers with their row in the decode's output."""

    seq: int
    pos: int
    tokens: list[int]


#: A generation's steps: the first `yield` gives the KV cells it may need (or None for a
#: background turn) and is answered, once admitted, with its slot (0: none). Each later
#: one gives the `Work` it needs done, answered with its logits' row, or None (a step it
#: did on its own). Its return value is the turn's result.
Steps = Generator[Work | int | None, Any, Any]


class TurnsClosed(RuntimeError):
    """The model's worker closed before the turn ended."""


class Host(Protocol):
    """What the turns need of the model that owns the context."""

    def capacity(self) -> tuple[int, int]:
        """(generations that can take turns at once + 1, KV cells in all); (1, 0) = one at a time."""

    def decode(self, parts: list[tuple[Work, bool]]) -> list[int]:
        """Evaluate every part in one batch (with its last token's logits if asked);
        return each part's row of logits (-1 where not asked)."""

    def release(self, turn: Turn) -> None:
        """`turn` ended: free its slot's sequence."""


class Turn:
    """One generation (or warm-up) on the model's worker."""

    def __init__(self, steps: Steps, background: bool) -> None:
        self.steps = steps
        self.background = background
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        #: When the model first worked on it after admission (None: not yet).
        self.began: float | None = None
        #: KV cells it may hold (prompt + output limit), from its first step.
        self.need = 0
        #: Its slot (0 = none): the sequence of the KV buffer it evaluates into.
        self.slot = 0
        #: What it asked for and has not been answered (the rest, if part of it was done).
        self.pending: Work | None = None
        #: Its answer, sent at its next step: its logits' row.
        self.row: int | None = None

    @property
    def need_tokens(self) -> int:
        """Tokens its pending work has left to evaluate."""
        return len(self.pending.tokens) if self.pending is not None else 0
