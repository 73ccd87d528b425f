"""What reaches a player's screen from any model: prose or a spoken line, never the
model's markup, its role labels or its next turn (docs/runs.md, The screen stays clean).

The embedded model is held to plain text by its grammar; a provider's model is not.
Chat models write `**bold**`, `*leans closer*`, `Narrator:` before the answer, or go
on past it with `\\nPlayer: ...` as if continuing a transcript. `ScreenText` is fed the
reply's text in the pieces it streams in and hands out what may be shown, in two steps:

1. `_Marks`: markup characters (`* # ` | { } > ]`) are dropped; an HTML-like tag or a
   special token (`<br>`) and a bracketed aside (`[sighs]`) go with their contents, a
   heading line (`# The Tavern`) whole; in a spoken line a `*stage direction*` goes
   whole too (it is not said), in prose only its asterisks (it is emphasis). A tag that
   ends a turn (`<end_of_turn>`, `<|im_end|>`) ends the reply.
2. `_Lines`, on the text left: a role label (one or two words and a colon: "Narrator:",
   "Bram Holt:") before the reply's first word is dropped; one at the start of a later
   line or sentence is the model writing the next turn, and the reply ends there. Line
   breaks and runs of spaces become single spaces.

What is held back while undecided: a line's or sentence's first words (until they are,
or cannot be, a label), a sentence's end mark (until what follows shows), and an open
tag, aside or stage direction (at most `_MAX_SPAN` characters). The rest streams as it
comes. Aliases are not its business (the de-aliaser's, after it).
"""

from __future__ import annotations

import re

__all__ = ["ScreenText", "screened"]

_MARK_SPECIAL = re.compile(r"[\n*<\[#`|{}>\]]")
#: Characters never shown, wherever they stand.
_DROP = "#`|{}>]"
_TAG = re.compile(r"</?[\w!|/-][^<>\n]*>")
#: A tag that ends a turn (`<end_of_turn>`, `<|im_end|>`, `<|eot_id|>`, `</s>`): what follows is not the reply.
_TURN_END = re.compile(r"end|eot|^</s>$", re.IGNORECASE)
#: The longest tag, aside or stage direction held back before it is shown as text.
_MAX_SPAN = 80

_WORD = r"[^\W\d_][\w'’-]*"
#: A label: one word, or two whose second is capitalised (a name: "Bram Holt", not "He said").
_LABEL = re.compile(rf"({_WORD})(?:[ \t]+({_WORD}))?[ \t]*:(?!\d)")
#: What may still grow into a label (held at a line's or sentence's start).
_LABEL_START = re.compile(rf"{_WORD}(?:[ \t]+(?:{_WORD})?)?[ \t]*")
_MAX_LABEL = 40
#: What a line or sentence never opens with ("- Bram grabs", ": yes").
_LEAD = re.compile(r"[\s:-]*")
#: Where plain text stops: a line break, or the space after a sentence's end.
_LINE_SPECIAL = re.compile(r"\n|(?<=[.!?…])[\"'”’)]*[ \t]+")
#: A sentence's end at the end of the held text: held until what follows shows.
_END_MARK = re.compile(r"[.!?…][\"'”’)]*$")
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[,.;:!?…)])")
_SPACES = re.compile(r"\s{2,}|[^\S ]")


class ScreenText:
    """One reply's text on its way to the screen. `spoken`: a line an NPC says (its
    stage directions are dropped) rather than prose. Not thread-safe; one per attempt."""

    def __init__(self, spoken: bool = False) -> None:
        self._marks = _Marks(spoken)
        self._lines = _Lines()

    @property
    def ended(self) -> bool:
        """The model began another turn: nothing more is shown."""
        return self._lines.ended or self._marks.ended

    def feed(self, text: str) -> str:
        if self.ended:
            return ""
        shown = self._lines.feed(self._marks.feed(text))
        return shown + self._lines.flush() if self._marks.ended else shown

    def flush(self) -> str:
        """The reply ended: what was held back, as it can best be shown."""
        if self.ended:
            return ""
        return self._lines.feed(self._marks.flush()) + self._lines.flush()


def screened(text: str, spoken: bool = False) -> str:
    """A whole text as `ScreenText` shows it (a decision's message)."""
    screen = ScreenText(spoken)
    return screen.feed(text) + screen.flush()


class _Marks:
    """Step 1: markup out, line breaks kept."""

    def __init__(self, spoken: bool) -> None:
        self._spoken = spoken
        self._held = ""
        self._line_start = True
        self.ended = False

    def feed(self, text: str) -> str:
        self._held += text
        return self._run(final=False)

    def flush(self) -> str:
        return self._run(final=True)

    def _run(self, final: bool) -> str:
        out: list[str] = []
        while self._held and not self.ended:
            found = _MARK_SPECIAL.search(self._held)
            if found is None:
                self._plain(out, self._held)
                self._held = ""
                break
            self._plain(out, self._held[: found.start()])
            self._held = self._held[found.start() :]
            if not self._mark(out, found.group(), final):
                break
        if self.ended:
            self._held = ""
        return "".join(out)

    def _plain(self, out: list[str], text: str) -> None:
        if text:
            out.append(text)
            self._line_start = self._line_start and not text.strip()

    def _mark(self, out: list[str], found: str, final: bool) -> bool:
        """Handle the mark at the start of the held text; False when more text is needed."""
        held = self._held
        if found == "\n":
            out.append("\n")
            self._held, self._line_start = held[1:], True
            return True
        if found == "#" and self._line_start:  # a heading: not prose
            end = held.find("\n")
            if end == -1 and not final:
                return False
            self._held = "" if end == -1 else held[end + 1 :]
            return True
        if found in _DROP:
            self._held = held[1:]
            return True
        if found == "<":
            tag = _TAG.match(held)
            if tag is not None:
                self.ended = _TURN_END.search(tag.group()) is not None
                return self._dropped(out, held[tag.end() :])
            if not final and len(held) < _MAX_SPAN and not any(c in held for c in ">\n"):
                return False  # it may still close as a tag
            self._held = held[1:]
            return True
        if found == "*":
            # "**" is emphasis; a single one opens a stage direction in a spoken line.
            if len(held) < 2 and not final:
                return False
            if held.startswith("**") or not self._spoken or held[1:2].isspace():
                self._held = held[2:] if held.startswith("**") else held[1:]
                return True
        end = held.find("]" if found == "[" else "*", 1)
        if 0 < end <= _MAX_SPAN and "\n" not in held[:end]:  # an aside or a stage direction: not shown
            return self._dropped(out, held[end + 1 :])
        if end == -1 and len(held) <= _MAX_SPAN and "\n" not in held and not final:
            return False
        self._held = held[1:]  # it never closed: its words are shown, the mark is not
        return True

    def _dropped(self, out: list[str], rest: str) -> bool:
        out.append(" ")  # what stood there parted words: "Aye,<br>that" is "Aye, that"
        self._held = rest
        return True


class _Lines:
    """Step 2: labels dropped or ended at, spaces made single."""

    def __init__(self) -> None:
        self._held = ""
        #: A label is looked for here: at a line's or sentence's start.
        self._at_start = True
        self._space = False  # a space is owed before the next text shown
        self._broke = False  # a line break since the last text shown
        self._shown = False
        self.ended = False

    def feed(self, text: str) -> str:
        if self.ended:
            return ""
        self._held += text
        return self._run(final=False)

    def flush(self) -> str:
        return "" if self.ended else self._run(final=True)

    def _run(self, final: bool) -> str:
        out: list[str] = []
        while self._held and not self.ended:
            if self._at_start:
                if not self._label(final):
                    break
                continue
            special = _LINE_SPECIAL.search(self._held)
            if special is None:
                mark = None if final else _END_MARK.search(self._held)
                cut = len(self._held) if mark is None else mark.start()
                self._show(out, self._held[:cut])
                self._held = self._held[cut:]
                break
            self._show(out, self._held[: special.start()])
            found = special.group()
            if found == "\n":
                self._broke = True
            else:
                self._show(out, found.rstrip(" \t"))
            self._held = self._held[special.end() :]
            self._space = self._at_start = True
        return "".join(out)

    def _show(self, out: list[str], text: str) -> None:
        if text[:1].isspace():
            self._space = True
            text = text.lstrip()
        if self._broke:
            text = text.lstrip(":")  # a colon opening a line: a label's, never prose
        if not text:
            return
        if self._space and self._shown and text[:1] not in ",.;:!?…)":
            out.append(" ")
        self._space = self._broke = False
        stripped = text.rstrip()
        out.append(_SPACES.sub(" ", _SPACE_BEFORE_MARK.sub("", stripped)))
        self._shown = True
        if len(stripped) < len(text):
            self._space = True

    def _label(self, final: bool) -> bool:
        """At a line's or sentence's start: drop a label, or end the reply at one.
        False when more text is needed to tell."""
        body = self._held[_LEAD.match(self._held).end() :]  # type: ignore[union-attr]  # (it matches "")
        if self._held != body and "\n" in self._held[: len(self._held) - len(body)]:
            self._broke = True
        if not body:
            self._held = "" if final else self._held
            return final
        label = _LABEL.match(body)
        if label is not None and label.end() == len(body) and not final:
            return False  # "5:" may be "5:30"
        if label is not None and (label.group(2) is None or label.group(2)[:1].isupper()):
            if self._shown:
                self.ended = True  # the model's next turn: not shown
                self._held = ""
                return True
            self._held = body[label.end() :]  # a label before the reply: dropped
            return bool(self._held)
        if not final and len(body) < _MAX_LABEL and _may_be_label(body):
            return False
        self._held, self._at_start = body, False
        return True


def _may_be_label(body: str) -> bool:
    """Whether the start of a line could still grow into a label: one word, or a first
    word and the start of a capitalised second."""
    if _LABEL_START.fullmatch(body) is None:
        return False
    second = body.split(None, 1)[1:]
    return not second or not second[0][:1].islower()
