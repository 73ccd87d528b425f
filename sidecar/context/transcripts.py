"""Paging through an actor's transcript (ReadTranscript) with opaque cursors.

A cursor names the session, the actor, the next index and a fingerprint of the
entry just before it. Transcripts are append-only, so a cursor stays valid
while that entry is unchanged; an import that replaces the transcript, or a
cursor from another session or actor, gets InvalidCursor instead of a page
from the wrong place.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from sidecar.errors import InvalidCursor, InvalidRequest, UnknownEntity
from sidecar.state.model import Session, TranscriptEntry

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "Page", "read_page", "make_cursor"]

DEFAULT_PAGE = 50
MAX_PAGE = 500
_VERSION = 1


@dataclass(frozen=True)
class Page:
    #: (index, entry) pairs, oldest first.
    entries: list[tuple[int, TranscriptEntry]]
    next_cursor: str
    total: int


def _fingerprint(entry: TranscriptEntry) -> int:
    raw = f"{entry.role}\x00{entry.speaker_id}\x00{entry.run_id}\x00{entry.unix_ms}\x00{entry.text}"
    return zlib.crc32(raw.encode("utf-8", "surrogatepass"))


def make_cursor(session_id: str, actor_id: str, index: int, entries: list[TranscriptEntry]) -> str:
    body = [_VERSION, session_id, actor_id, index, _fingerprint(entries[index - 1])]
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
    start = 0
    if cursor:
        c_session, c_actor, index, fp = _parse_cursor(cursor)
        if c_session != session.id or c_actor != actor_id:
            raise InvalidCursor("the cursor belongs to another session or actor's transcript")
        if index < 1 or index > len(entries) or _fingerprint(entries[index - 1]) != fp:
            raise InvalidCursor("the cursor is stale: the transcript was replaced since it was issued")
        start = index
    end = min(len(entries), start + size)
    page = [(i, entries[i]) for i in range(start, end)]
    next_cursor = make_cursor(session.id, actor_id, end, entries) if end < len(entries) else ""
    return Page(page, next_cursor, len(entries))
