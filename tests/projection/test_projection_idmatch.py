"""The rule for finding engine IDs in text, for both matcher backends."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.idsearch import BACKEND, IdMatcher, matcher_for, searchable

BACKENDS = ["ac", "regex"] if BACKEND == "ac" else ["regex"]

IDS = [
    "BP_Goblin_C_1",
    "BP_Goblin_C_12",
    "Blacksmith",
    "2147483647",
    "/Game/Maps/Level 1",
    "ゴブリン-7",
    "a",
    "1",
    "npc",
    "door",
    "Goblin",
    "1999",
]


@pytest.fixture(params=BACKENDS)
def m(request) -> IdMatcher:
    return IdMatcher(IDS, backend=request.param)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("x BP_Goblin_C_12 y", ["BP_Goblin_C_12"]),  # longest wins
        ("BP_Goblin_C_1.", ["BP_Goblin_C_1"]),
        ("npc_BP_Goblin_C_1x", ["BP_Goblin_C_1"]),  # mixed IDs match inside longer text
        ("the Blacksmith.", ["Blacksmith"]),
        ("Blacksmiths", []),  # all-letter IDs may not touch a letter
        ("Blacksmith_2", ["Blacksmith"]),
        ("id2147483647", ["2147483647"]),
        ("21474836470", []),  # all-digit IDs may not touch a digit
        ("/Game/Maps/Level 1/sub", ["/Game/Maps/Level 1"]),
        ("ゴブリン-7さん", ["ゴブリン-7"]),
        ("option 1: a door for the Goblin in 1999", []),  # short and word-like IDs are not searched
        ("BP_Goblin_C_1 and BP_Goblin_C_12 and Blacksmith", ["BP_Goblin_C_1", "BP_Goblin_C_12", "Blacksmith"]),
        ("", []),
    ],
)
def test_rule(m, text, found):
    assert m.find_all(text) == found
    assert (m.first(text) is not None) == bool(found)


def test_sub_replaces_every_occurrence(m):
    out = m.sub("BP_Goblin_C_12 met BP_Goblin_C_1 at /Game/Maps/Level 1.", lambda i: f"<{len(i)}>")
    assert out == "<14> met <13> at <18>."
    assert m.sub("nothing here", lambda i: "X") == "nothing here"


@pytest.mark.parametrize(
    ("ident", "ok"),
    [
        ("a", False),
        ("npc", False),
        ("door", False),
        ("Goblinoid", True),
        ("Goblin", False),
        ("1999", False),
        ("123456", True),
        ("a-1b", True),
        ("e1", False),
        (str(uuid.UUID(int=1)), True),
    ],
)
def test_searchable(ident, ok):
    assert searchable(ident) is ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_extended_matcher_finds_old_and_new(backend):
    base = IdMatcher([f"GUID-{i:06d}" for i in range(100)], backend=backend)
    grown = base.extended(["NEW-ID-0001"]).extended(["NEW-ID-0002"])
    assert grown.find_all("GUID-000042 NEW-ID-0001 NEW-ID-0002") == ["GUID-000042", "NEW-ID-0001", "NEW-ID-0002"]
    assert base.find_all("NEW-ID-0001") == []
    assert base.extended(["GUID-000001", "x"]) is base  # nothing new (or nothing searchable)


def test_matcher_for_caches_by_id_set_and_extends():
    ids = frozenset(f"CACHE-{i:05d}" for i in range(50))
    first = matcher_for(ids)
    assert matcher_for(frozenset(ids)) is first
    grown = matcher_for(ids | {"CACHE-NEW-1"}, previous=first)
    assert grown.find_all("CACHE-NEW-1 CACHE-00003") == ["CACHE-NEW-1", "CACHE-00003"]
    assert grown.ids == ids | {"CACHE-NEW-1"}


def _reference(ids: list[str], text: str) -> bool:
    """Brute force: does any searchable ID occur in `text` by the rule?"""
    for ident in ids:
        if not searchable(ident):
            continue
        start = text.find(ident)
        while start != -1:
            end = start + len(ident)
            before = text[start - 1] if start else ""
            after = text[end] if end < len(text) else ""
            if ident.isalpha():
                ok = not before.isalpha() and not after.isalpha()
            elif ident.isdigit():
                ok = not before.isdigit() and not after.isdigit()
            else:
                ok = True
            if ok:
                return True
            start = text.find(ident, start + 1)
    return False


_pieces = st.sampled_from(
    [
        "BP_Goblin_C_1",
        "BP_Goblin_C_12",
        "Goblinoid",
        "Goblinoids",
        "1234567",
        "12345678",
        "/Game/A",
        "/Game/A/B",
        "ид-аб",
        "a",
        "x",
        " ",
        "_",
        "-",
        "1",
        "é",
        "Guard",
    ]
)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=300, deadline=None)
@given(ids=st.lists(_pieces, min_size=1, max_size=6, unique=True), parts=st.lists(_pieces, max_size=12))
def test_matcher_agrees_with_brute_force(backend, ids, parts):
    text = "".join(parts)
    m = IdMatcher(ids, backend=backend)
    assert (m.first(text) is not None) == _reference(ids, text)
    # Every reported hit is a real occurrence of a searched ID, and after replacing
    # them with a marker no ID occurs any more (sub misses nothing).
    for found in m.find_all(text):
        assert found in m.ids and found in text
    assert not _reference(ids, m.sub(text, lambda i: "\x00"))
