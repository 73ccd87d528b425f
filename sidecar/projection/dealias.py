"""Aliases back to the game's names in text the game will show (docs/privacy.md,
"Text the game receives"): the model writes `npc_3`, the player reads "Grub".

A model streams its reply in pieces that may split an alias anywhere
(`Halt, pla` + `yer_1!`). `Dealiaser` is fed those pieces in order and hands
out text in which every alias is replaced, holding back only the end of what
arrived when that end could still grow into an alias (or into a longer one:
`npc_1` may be the start of `npc_12`). Each replaced name comes with a
`Mention` (the entity's engine ID and the name's span in that piece), so a UI
can highlight or link it.

An occurrence is an alias as a whole word (not touching a letter, digit or
underscore on either side), leftmost, longest alias first, as the projection's
own reverse mapping matches aliases in decision messages. What an alias turns
into is the projection's call (`Projection.display`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import msgspec

from sidecar.state.aliases import KIND_PREFIX

__all__ = ["AliasTable", "Dealiaser", "Mention", "Piece", "KIND_ALIAS"]

#: What a kind alias looks like (`npc_3`, `loc_1`...). Such text is looked up when it
#: occurs; only other aliases (display-name mode) need to be listed up front.
KIND_ALIAS = re.compile("(?:" + "|".join(sorted(set(KIND_PREFIX.values()), key=len, reverse=True)) + r")_[1-9][0-9]*")
_PREFIXES = tuple(sorted(set(KIND_PREFIX.values())))
_WORD = re.compile(r"\w")
#: Digits a kind alias may hold and still be held back at the end of a piece.
_MAX_KIND_ALIAS = 32


class Mention(msgspec.Struct, frozen=True):
    """An entity named in a piece of text: `text[start:start + length]` (code points)."""

    entity_id: str
    start: int
    length: int


class Piece(msgspec.Struct, frozen=True):
    text: str
    sentence_end: bool = False
    mentions: tuple[Mention, ...] = ()


#: alias -> (text to show, engine ID for a mention or "" for none); None: not an alias, keep it.
Lookup = Callable[[str], "tuple[str, str] | None"]


class AliasTable:
    """What finding the listed aliases takes, built once and shared (read-only) by
    every Dealiaser of a prompt: over 1,000 display-name aliases it costs ~20 ms,
    so a run builds it in its prompt's worker thread, not per piece of text on the
    event loop."""

    def __init__(self, literal_aliases: Iterable[str] = ()) -> None:
        literals = sorted({a for a in literal_aliases if a and not KIND_ALIAS.fullmatch(a)}, key=len, reverse=True)
        self.literals: tuple[str, ...] = tuple(literals)
        #: Every start of a listed alias, the alias included: one set lookup per position.
        self.starts = frozenset(a[:i] for a in literals for i in range(1, len(a) + 1))
        alternatives = [re.escape(a) for a in literals] + [KIND_ALIAS.pattern]
        self.pattern = re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")
        self.longest = max([_MAX_KIND_ALIAS, *(len(a) for a in literals)])


class Dealiaser:
    """Streaming alias replacement for one reply. Not thread-safe; one per attempt.
    `table`: the listed aliases already prepared (then `literal_aliases` is unused)."""

    def __init__(self, lookup: Lookup, literal_aliases: Iterable[str] = (), *, table: AliasTable | None = None) -> None:
        self._lookup = lookup
        self._cache: dict[str, tuple[str, str] | None] = {}
        self._table = table if table is not None else AliasTable(literal_aliases)
        # Bound here as well: read per character of every piece (_hold_from, _could_start).
        self._starts = self._table.starts
        self._pattern = self._table.pattern
        self._longest = self._table.longest
        #: The last character handed out (the left edge of the next match), or "".
        self._before = ""
        self._held = ""
        self._held_end = False

    def feed(self, text: str, sentence_end: bool = False) -> Piece | None:
        """The next piece to hand out (None when all of it is held back for now)."""
        if not text:
            return None
        return self._step(text, sentence_end, final=False)

    def flush(self) -> Piece | None:
        """The reply ended: hand out what is held (None when nothing is)."""
        if not self._held:
            return None
        return self._step("", self._held_end, final=True)

    def whole(self, text: str) -> Piece:
        """A complete text at once (a decision's message)."""
        out = Dealiaser(self._lookup, table=self._table)
        out._cache = self._cache
        first = out.feed(text) or Piece("")
        rest = out.flush() or Piece("")
        shift = len(first.text)
        mentions = first.mentions + tuple(Mention(m.entity_id, m.start + shift, m.length) for m in rest.mentions)
        return Piece(first.text + rest.text, False, mentions)

    # -- internals ---------------------------------------------------------------

    def _step(self, text: str, sentence_end: bool, *, final: bool) -> Piece | None:
        # buf[0] is the character before (or a space at the very start), so the
        # pattern's left-edge rule sees what was already handed out.
        buf = (self._before or " ") + self._held + text
        n = len(buf)
        cut = n if final else self._hold_from(buf, 1)
        out: list[str] = []
        mentions: list[Mention] = []
        length = 0
        pos = 1
        for m in self._pattern.finditer(buf, 1):
            if m.start() >= cut:
                break
            # A match that starts before `cut` is settled: the text after it is here
            # (else its start would have been held back). It may reach past `cut`.
            plain = buf[pos : m.start()]
            out.append(plain)
            length += len(plain)
            shown, entity_id = self._show(m.group())
            if entity_id:
                mentions.append(Mention(entity_id, length, len(shown)))
            out.append(shown)
            length += len(shown)
            pos = m.end()
            if pos > cut:
                cut = self._hold_from(buf, pos)
        out.append(buf[pos:cut])
        self._held = buf[cut:]
        self._held_end = sentence_end
        if cut > 1:
            self._before = buf[cut - 1]
        handed = "".join(out)
        if not handed:
            return None
        return Piece(handed, sentence_end and not self._held, tuple(mentions))

    def _show(self, alias: str) -> tuple[str, str]:
        if alias not in self._cache:
            self._cache[alias] = self._lookup(alias)
        found = self._cache[alias]
        return found if found is not None else (alias, "")

    def _hold_from(self, buf: str, start: int) -> int:
        """The earliest position from `start` where the rest of `buf` could still
        become an alias occurrence (so it must wait for more text); len(buf) if none."""
        n = len(buf)
        for p in range(max(start, n - self._longest), n):
            if _WORD.match(buf[p - 1]) is None and self._could_start(buf[p:]):
                return p
        return n

    def _could_start(self, tail: str) -> bool:
        """Whether `tail` is an alias or the start of one (more text could complete it,
        or turn a complete one into a longer one)."""
        for prefix in _PREFIXES:
            if prefix.startswith(tail):
                return True
            if tail.startswith(prefix + "_"):
                digits = tail[len(prefix) + 1 :]
                if digits == "" or (digits.isdigit() and digits.isascii() and digits[0] != "0"):
                    return True
        return tail in self._starts
