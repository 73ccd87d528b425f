"""Paging through an actor's transcript (ReadTranscript) with opaque cursors,
and the entries as the game shows them.

A cursor names the session, the actor, the next index and a fingerprint of the
entry just before it. Indexes count from the transcript's very first entry
(compacted ones included), so compaction (which drops the oldest entries for a
summary) leaves a cursor valid while its entry is still held; an import that
replaces the transcript, a compaction past the cursor, or a cursor from another
session or actor gets InvalidCursor instead of a page from the wrong place.

Replies are stored as the model wrote them (aliases, `npc_2`); `Shown` turns
them into what the run stream sends (display names and mentions), so a dialogue
log built from ReadTranscript never puts an alias on a player's screen.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from sidecar.errors import InvalidCursor, InvalidRequest, SidecarError, UnknownEntity
from sidecar.projection import Projection
from sidecar.projection.dealias import KIND_ALIAS, Dealiaser, Mention, Piece
from sidecar.state.model import Session, TranscriptEntry

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "Page", "read_page", "make_cursor", "Shown"]

DEFAULT_PAGE = 50
MAX_PAGE = 500
_VERSION = 1


@dataclass(frozen=True)
class Page:
    #: (index, entry) pairs, oldest first; indexes count compacted entries too.
    entries: list[tuple[int, TranscriptEntry]]
    next_cursor: str
    total: int
    #: Index of the oldest entry held (the ones before it were compacted or capped).
    first_index: int = 0


def _fingerprint(entry: TranscriptEntry) -> int:
    raw = f"{entry.role}\x00{entry.speaker_id}\x00{entry.run_id}\x00{entry.unix_ms}\x00{entry.text}"
    return zlib.crc32(raw.encode("utf-8", "surrogatepass"))


def make_cursor(session_id: str, actor_id: str, index: int, entries: list[TranscriptEntry], base: int = 0) -> str:
    """`index`: into `entries`; the cursor holds it counted from the first entry ever (`base` + index)."""
    body = [_VERSION, session_id, actor_id, base + index, _fingerprint(entries[index - 1])]
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parse_cursor(cursor: str) -> tuple[str, str, int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, session_id, actor_id, index, fp = json.loads(raw)
        if version != _VERSION or not isinstance(index, int) or not isinstance(fp, int):
            raise ValueError("version")
        if not isinstance(session_id, str) or not isinstance(actor_id, str):
            raise ValueError("fields")
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidCursor("the cursor is not one this sidecar issued") from exc
    return session_id, actor_id, index, fp


def read_page(session: Session, actor_id: str, page_size: int, cursor: str) -> Page:
    """One page, oldest first. Raises InvalidRequest (page size), UnknownEntity
    (no such actor and no transcript) and InvalidCursor (stale or foreign)."""
    if page_size < 0 or page_size > MAX_PAGE:
        raise InvalidRequest(f"page_size must be between 0 (= {DEFAULT_PAGE}) and {MAX_PAGE}, got {page_size}")
    size = page_size or DEFAULT_PAGE
    entries = session.transcripts.get(actor_id)
    if entries is None:
        if actor_id and actor_id not in session.world.entities:
            raise UnknownEntity(f"actor {actor_id!r} is not in session {session.id!r} and has no transcript")
        entries = []
    summary = session.summaries.get(actor_id)
    base = summary.removed if summary is not None else 0
    start = 0
    if cursor:
        c_session, c_actor, index, fp = _parse_cursor(cursor)
        if c_session != session.id or c_actor != actor_id:
            raise InvalidCursor("the cursor belongs to another session or actor's transcript")
        local = index - base
        if local < 1 or local > len(entries) or _fingerprint(entries[local - 1]) != fp:
            raise InvalidCursor(
                "the cursor is stale: the transcript was replaced or compacted past it since it was issued"
            )
        start = local
    end = min(len(entries), start + size)
    page = [(base + i, entries[i]) for i in range(start, end)]
    next_cursor = make_cursor(session.id, actor_id, end, entries, base) if end < len(entries) else ""
    return Page(page, next_cursor, base + len(entries), base)


class Shown:
    """Stored text as the game shows it to a player: each alias as the actor's
    projection names it (display name and mention, or a generic word for what the
    actor does not perceive), as the run stream does. Player lines are the game's
    own text and stay as they are."""

    def __init__(self, session: Session, actor_id: str) -> None:
        self._session = session
        self._actor_id = actor_id
        self._dealias: Dealiaser | None = None

    def text(self, text: str) -> Piece:
        """Text read back without the run's own projection (a summary, an old entry)."""
        if not text:
            return Piece("")
        session, actor_id = self._session, self._actor_id
        if actor_id and actor_id in session.world.entities:
            if self._dealias is None:
                try:
                    proj = Projection(session, actor_id)
                    self._dealias = Dealiaser(proj.display, [proj.alias(e.id) for e in proj.visible_entities()])
                except SidecarError:  # hidden since
                    pass
            if self._dealias is not None:
                return self._dealias.whole(text)
        # The narrator (or an actor removed since) perceives what its text names, as its
        # runs' projections did (the entities an event names); hidden ones stay generic.
        ids, ents = session.aliases.by_alias, session.world.entities
        found = (ids[a] for a in KIND_ALIAS.findall(text) if a in ids)
        named = {i for i in found if i in ents and ents[i].visibility.level != "hidden"}
        proj = Projection(session, "", named_ids=named)
        return Dealiaser(proj.display, [proj.alias(e.id) for e in proj.visible_entities()]).whole(text)

    def entry(self, entry: TranscriptEntry) -> Piece:
        if entry.shown is not None:  # as the run streamed it
            mentions = tuple(Mention(m.entity_id, m.start, m.length) for m in entry.mentions)
            return Piece(entry.shown, False, mentions)
        if entry.role in ("actor", "narrator"):  # recorded before `shown` existed
            return self.text(entry.text)
        return Piece(entry.text)  # the game's own text
