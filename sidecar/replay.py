"""`game-sidecar replay FILE`: run recorded model calls again and compare (for QA).

FILE is what a sidecar started with `GAME_SIDECAR_RECORD_RUNS=FILE` wrote
(sidecar/runs/replay_log.py): each model call's messages, shape, seed and
sampling. Each is sent again, to the same profile of this machine's config,
and the two texts are printed with a word diff. On the embedded model the same
messages, seed and model give the same text byte for byte; a provider may not
(few honour a seed), and its replay shows how far it strays.

Exit status: 0 when every replayed text is identical, 1 when one differs,
2 when the file or a profile cannot be used.
"""

from __future__ import annotations

import difflib
import json
import sys
from typing import Any, TextIO

from sidecar.config import load_config
from sidecar.errors import SidecarError
from sidecar.llm.gateway import ModelGateway
from sidecar.llm.types import Limits, ModelRequest, ReplyShape, TextPiece

__all__ = ["replay", "read_records", "word_diff"]


def read_records(path: str, run_id: str = "") -> list[dict[str, Any]]:
    """The recorded calls in `path` (only `run_id`'s when given). Raises OSError, ValueError."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if not run_id or r.get("run_id") == run_id]


def word_diff(before: str, after: str) -> str:
    """The differing words, `[-old-]{+new+}`; "" when the texts are identical."""
    if before == after:
        return ""
    a, b = before.split(" "), after.split(" ")
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(" ".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    return " ".join(out) or "(whitespace differs)"


def _request(gateway: ModelGateway, record: dict[str, Any]) -> ModelRequest:
    shape = record.get("shape")
    limits = Limits(
        max_output_tokens=int(record["max_output_tokens"]),
        temperature=float(record["temperature"]),
        stop=tuple(record.get("stop") or ()),
    )
    return ModelRequest(
        gateway.target(record["profile"]),
        record["messages"],
        limits,
        shape=ReplyShape(**shape) if shape else None,
        seed=int(record["seed"]),
    )


async def replay(
    path: str, *, run_id: str = "", config: str | None = None, out: TextIO = sys.stdout,
    counts: list[int] | None = None,
) -> int:  # fmt: skip
    """The command; `counts`, when given, receives [identical, replayed] (the benchmark reads it)."""
    try:
        records = read_records(path, run_id)
    except (OSError, ValueError) as exc:
        print(f"game-sidecar replay: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    if not records:
        print(f"game-sidecar replay: no recorded run{' ' + run_id if run_id else ''} in {path}", file=sys.stderr)
        return 2
    gateway = ModelGateway(load_config(config))
    differ = 0
    try:
        for record in records:
            try:
                request = _request(gateway, record)
                pieces = [p async for p in gateway.stream(request)]
            except (SidecarError, KeyError, TypeError, ValueError) as exc:
                print(f"game-sidecar replay: run {record.get('run_id')}: {exc}", file=sys.stderr)
                return 2
            again = "".join(p.text for p in pieces if isinstance(p, TextPiece))
            diff = word_diff(record["text"], again)
            differ += bool(diff)
            print(f"run {record['run_id']} attempt {record['attempt']} (seed {record['seed']}, "
                  f"{record['model']}): {'DIFFERENT' if diff else 'identical'}", file=out)
            print(f"  recorded: {record['text']}\n  replayed: {again}", file=out)
            if diff:
                print(f"  diff:     {diff}", file=out)
    finally:
        await gateway.aclose()
    print(f"{len(records) - differ} of {len(records)} identical", file=out)
    if counts is not None:
        counts[:] = [len(records) - differ, len(records)]
    return 1 if differ else 0
