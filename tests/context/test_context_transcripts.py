"""ReadTranscript paging (domain level): cursors chain, stale and foreign cursors are refused."""

from __future__ import annotations

import pytest
from ctxhelpers import engine, prepare
from world import anchor_tavern

from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.context.transcripts import read_page
from sidecar.errors import InvalidCursor, InvalidRequest, UnknownEntity

NPC = "npc-maerwyn-7"


def _talk(s, turns: int) -> None:
    eng = engine()
    for i in range(turns):
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"line {i}")))
        p.record(f"reply {i}", interrupted=False, run_id=f"r{i}")


def test_pages_chain_to_the_end() -> None:
    s = anchor_tavern()
    _talk(s, 5)
    seen, cursor = [], ""
    while True:
        page = read_page(s, NPC, 3, cursor)
        assert page.total == 10
        seen.extend(page.entries)
        cursor = page.next_cursor
        if not cursor:
            break
    assert [i for i, _ in seen] == list(range(10))
    assert [e.text for _, e in seen][:4] == ["line 0", "reply 0", "line 1", "reply 1"]


def test_appends_keep_cursors_valid_replacement_makes_them_stale() -> None:
    s = anchor_tavern()
    _talk(s, 3)
    page = read_page(s, NPC, 2, "")
    _talk(s, 1)  # appending is fine
    assert read_page(s, NPC, 2, page.next_cursor).entries[0][0] == 2
    # An import replaces the transcript: same length, different entries.
    fresh = anchor_tavern()
    _talk(fresh, 4)
    s.transcripts[NPC] = fresh.transcripts[NPC]
    with pytest.raises(InvalidCursor, match="stale"):
        read_page(s, NPC, 2, page.next_cursor)


def test_foreign_and_garbage_cursors() -> None:
    s = anchor_tavern()
    _talk(s, 3)
    cursor = read_page(s, NPC, 1, "").next_cursor
    with pytest.raises(InvalidCursor, match="another"):
        read_page(s, "", 1, cursor)
    other = anchor_tavern("s2")
    _talk(other, 3)
    with pytest.raises(InvalidCursor, match="another"):
        read_page(other, NPC, 1, cursor)
    for junk in ("garbage!!", "e30", cursor[:-3]):
        with pytest.raises(InvalidCursor):
            read_page(s, NPC, 1, junk)


def test_bad_page_size_and_unknown_actor() -> None:
    s = anchor_tavern()
    with pytest.raises(InvalidRequest):
        read_page(s, NPC, 501, "")
    with pytest.raises(InvalidRequest):
        read_page(s, NPC, -1, "")
    with pytest.raises(UnknownEntity):
        read_page(s, "who-is-this", 0, "")
    assert read_page(s, "", 0, "").total == 0  # the narrator always exists
