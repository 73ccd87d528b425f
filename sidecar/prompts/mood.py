"""Mood and condition: PAD -> one of six tags (docs/context.md, Personas and mood), HP
descriptions and the situational-modifier conditions of persona templates.

Pure functions over domain values; the persona renderer caches on their output,
so a PAD change inside one region yields the same tag and no rebuild.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

from sidecar.state.model import Entity, HpDescription, Pad

__all__ = ["MOOD_TAGS", "pad_to_tag", "hp_fraction", "hp_description", "condition_holds"]

MOOD_TAGS = ("calm", "joyful", "angry", "scared", "sad", "neutral")


def pad_to_tag(pad: Pad | None) -> str:
    """Seed 002's `padToTag`, thresholds and order exactly as written there."""
    if pad is None:
        return "neutral"
    p, a, d = pad.pleasure, pad.arousal, pad.dominance
    if p < -0.3 and a > 0.4 and d > 0.0:
        return "angry"
    if p < -0.3 and a > 0.4 and d < 0.0:
        return "scared"
    if p > 0.3 and a < 0.0:
        return "calm"
    if p > 0.3 and a > 0.3:
        return "joyful"
    if p < -0.3 and a < 0.0:
        return "sad"
    return "neutral"


def _number(entity: Entity | None, name: str) -> float | None:
    if entity is None:
        return None
    field = entity.fields.get(name)
    if field is None:
        return None
    value = field.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def hp_fraction(entity: Entity | None) -> float | None:
    """hp / max_hp from the entity's fields "hp" and "max_hp" (None when absent)."""
    hp, max_hp = _number(entity, "hp"), _number(entity, "max_hp")
    if hp is None or not max_hp or max_hp <= 0:
        return None
    return max(0.0, min(1.0, hp / max_hp))


def hp_description(descriptions: list[HpDescription], fraction: float | None) -> tuple[int, str]:
    """(bucket, text): the description with the smallest `max_fraction` that
    still covers `fraction`. The bucket index is what the persona cache keys
    on, so HP moving inside one bucket changes nothing."""
    if fraction is None or not descriptions:
        return -1, ""
    ordered = sorted(descriptions, key=lambda d: d.max_fraction)
    for i, desc in enumerate(ordered):
        if fraction <= desc.max_fraction:
            return i, desc.text
    return -1, ""


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_COMPARE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|==|!=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")


def condition_holds(condition: str, entity: Entity | None) -> bool:
    """Evaluate a situational-modifier condition over the actor.

    Forms: `tag:NAME` (the actor has the tag), `not tag:NAME`,
    `FIELD OP NUMBER` with OP in < <= > >= == != and FIELD a numeric field
    or `hp_fraction`, and a bare `FIELD` (a true bool field). Anything else
    is false: a template typo turns a modifier off, it never breaks a run.
    """
    cond = condition.strip()
    if cond.startswith("not "):
        return not condition_holds(cond[4:], entity)
    if entity is None:
        return False
    if cond.startswith("tag:"):
        return cond[4:].strip() in entity.tags
    match = _COMPARE.match(cond)
    if match:
        name, op, number = match.groups()
        value = hp_fraction(entity) if name == "hp_fraction" else _number(entity, name)
        return value is not None and _OPS[op](value, float(number))
    field = entity.fields.get(cond)
    return field is not None and field.value is True
