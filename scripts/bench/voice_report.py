"""The figures of scripts/bench/bench_voice.py from its replies: the summary, the table, the
markdown block for docs/benchmarks.md, and the verbatim sample. Free of `sidecar` imports."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from voice_metrics import CHECKS

__all__ = ["Reply", "pick_verbatim", "summarize", "table", "markdown"]


@dataclass
class Reply:
    scene: str
    #: "narration", "dialogue" or "decision".
    kind: str
    #: Engine ID of the actor ("" = the narrator).
    actor: str
    #: The input: the event, the player's line, or the decision's situation.
    input: str
    #: The streamed text, concatenated: what the game shows.
    text: str = ""
    #: Failed checks (voice_metrics.CHECKS) with what each found; {} = clean.
    problems: dict[str, str] = field(default_factory=dict)
    #: Names or IDs the actor should not have used; [] = right.
    wrong_names: list[str] = field(default_factory=list)
    completion_tokens: int = 0
    prompt_tokens: int = 0
    first_token_ms: float = 0.0
    total_ms: float = 0.0
    finish_reason: str = ""
    attempts: int = 0
    #: Decisions: the chosen action_id ("" = none), its spoken message, the rejections.
    action_id: str = ""
    message: str = ""
    rejected: list[str] = field(default_factory=list)
    sensible: str = ""
    #: The parameters the game got back, and each option's parameter names (options with some).
    parameters: dict[str, str] = field(default_factory=dict)
    with_parameters: dict[str, list[str]] = field(default_factory=dict)
    #: The run's error reason (INVALID_CHOICE...), "" when it finished.
    error: str = ""
    model: str = ""

    @property
    def clean(self) -> bool:
        return not self.problems and not self.error


def _ratio(good: int, total: int) -> float | None:
    return round(good / total, 3) if total else None


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summarize(
    replies: Sequence[Reply], runs_per_scene: dict[str, int], replayed: tuple[int, int] | None = None
) -> dict[str, object]:
    """`replayed`: (identical, total) model calls that `game-sidecar replay` sent again with
    the seed each recorded (issue 29 item 5); None when not replayed."""
    voiced = [r for r in replies if r.kind in ("narration", "dialogue")]
    decisions = [r for r in replies if r.kind == "decision"]
    checks = Counter(check for r in voiced for check in r.problems)
    checks["run_error"] = sum(bool(r.error) for r in voiced)
    finished = [r for r in replies if not r.error]
    first = [r.first_token_ms for r in finished if r.first_token_ms > 0]
    return {
        "model": next((r.model for r in replies if r.model), ""),
        "replies": len(replies),
        "clean_ratio": _ratio(sum(r.clean for r in voiced), len(voiced)),
        "clean_by_kind": {k: _ratio(sum(r.clean for r in voiced if r.kind == k), sum(r.kind == k for r in voiced))
                          for k in ("narration", "dialogue")},
        "unclean_by_check": {c: checks.get(c, 0) for c in (*CHECKS, "run_error")},
        # What the game was shown names only what the actor perceives (a failed run's partial text too).
        "names_right_ratio": _ratio(sum(not r.wrong_names for r in replies), len(replies)),
        "decisions_valid_ratio": _ratio(sum(bool(r.action_id) and not r.error for r in decisions), len(decisions)),
        # Of the accepted choices of an option with parameters: each of its parameters came back.
        "decisions_with_parameters": _ratio(
            sum(set(r.parameters) == set(r.with_parameters[r.action_id]) for r in decisions
                if r.action_id in r.with_parameters and not r.error),
            sum(r.action_id in r.with_parameters and not r.error for r in decisions)),
        "decisions_sensible_ratio": _ratio(sum(r.action_id == r.sensible for r in decisions if r.sensible),
                                           sum(bool(r.sensible) for r in decisions)),
        "replay_identical_ratio": _ratio(*replayed) if replayed else None,
        "tokens_per_reply_median": statistics.median([r.completion_tokens for r in finished]) if finished else None,
        "first_token_ms_median": round(statistics.median(first), 1) if first else None,
        "first_token_ms_p90": _percentile(first, 0.9),
        "finish_length": sum(r.finish_reason == "LENGTH" for r in replies),
        "errors": dict(Counter(r.error for r in replies if r.error)),
        "runs_per_scene": runs_per_scene,
    }


def _show(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_show(v)}" for k, v in value.items()) or "none"
    return str(value)


def _rows(summary: dict[str, object]) -> list[tuple[str, str]]:
    rows = [(key, _show(summary[key])) for key in (
        "model", "replies", "clean_ratio", "clean_by_kind", "unclean_by_check", "names_right_ratio",
        "decisions_valid_ratio", "decisions_with_parameters", "decisions_sensible_ratio",
        "replay_identical_ratio", "tokens_per_reply_median", "first_token_ms_median", "first_token_ms_p90",
        "finish_length", "errors", "runs_per_scene", "wall_s",
    ) if key in summary]
    return [(k, "n/a (not replayed)" if k == "replay_identical_ratio" and v == "n/a" else v) for k, v in rows]


def table(summary: dict[str, object]) -> str:
    rows = _rows(summary)
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def pick_verbatim(replies: Sequence[Reply], n: int) -> list[Reply]:
    """`n` narrations, alternating unclean and clean ones (good and bad, as the issue asks), each
    kind spread over the scenes in order; when one kind runs out the other fills in."""
    narrations = [r for r in replies if r.kind == "narration"]
    bad = _spread([r for r in narrations if not r.clean or r.wrong_names])
    good = _spread([r for r in narrations if r.clean and not r.wrong_names])
    picked: list[Reply] = []
    while len(picked) < n and (bad or good):
        for pool in (good, bad):
            if pool and len(picked) < n:
                picked.append(pool.pop(0))
    return picked


def _spread(replies: list[Reply]) -> list[Reply]:
    """Round-robin over scenes, so a sample of the first few covers every scene."""
    by_scene: dict[str, list[Reply]] = {}
    for reply in replies:
        by_scene.setdefault(reply.scene, []).append(reply)
    out: list[Reply] = []
    while any(by_scene.values()):
        for pool in by_scene.values():
            if pool:
                out.append(pool.pop(0))
    return out


def verdict(reply: Reply) -> str:
    faults = [f"{check} ({detail})" for check, detail in reply.problems.items()]
    faults += [f"names ({', '.join(reply.wrong_names)})"] if reply.wrong_names else []
    faults += [f"error {reply.error}"] if reply.error else []
    return "clean" if not faults else "; ".join(faults)


def markdown(summary: dict[str, object], sample: Sequence[Reply], command: str) -> str:
    lines = [f"Command: `{command}`", "", "| figure | value |", "| --- | --- |"]
    lines += [f"| `{k}` | {v.replace('|', '/')} |" for k, v in _rows(summary)]
    if sample:
        lines += ["", "Narrations verbatim (the event, then the text the game showed, then the checks):", ""]
        for i, reply in enumerate(sample, 1):
            shown = reply.text.replace("\n", "⏎") or "(empty)"
            lines += [f"{i}. *{reply.scene}*, event: {reply.input}", f"   > {shown}", f"   ({verdict(reply)})"]
    return "\n".join(lines)
