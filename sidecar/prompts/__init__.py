"""Prompt pieces with no session logic: the system rules, persona templates
(hot-reloaded files) and their rendering, PAD -> mood tags, decision replies
and notes, and escaping of untrusted text. Used by `sidecar.context`."""

from sidecar.prompts.decisions import MAX_NOTES_LENGTH, ReplyRejected, last_json_object, parse_decision
from sidecar.prompts.escape import collapse_ws, quote
from sidecar.prompts.mood import MOOD_TAGS, pad_to_tag
from sidecar.prompts.persona import PersonaRenderer
from sidecar.prompts.system import SYSTEM_RULES
from sidecar.prompts.templates import TemplateStore

__all__ = [
    "MAX_NOTES_LENGTH",
    "MOOD_TAGS",
    "SYSTEM_RULES",
    "PersonaRenderer",
    "ReplyRejected",
    "TemplateStore",
    "collapse_ws",
    "last_json_object",
    "pad_to_tag",
    "parse_decision",
    "quote",
]
