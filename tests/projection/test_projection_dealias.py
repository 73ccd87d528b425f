"""The streaming de-aliaser: whatever way a model's stream splits its reply,
the game gets the same text, with its own names for aliases, and mentions whose
spans hold those names (docs/privacy.md, "Text the game receives")."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from world import apply, leak_tavern

from sidecar.projection import Projection
from sidecar.projection.dealias import Dealiaser, Piece
from sidecar.state import ops as o
from sidecar.state.model import Entity

#: alias -> (name the game set, engine ID); "" ID: an alias the actor does not perceive.
NAMES = {
    "npc_1": ("Grub", "BP_Goblin_C_1"),
    "npc_12": ("Zoë the Tall", "BP_Giant_C_12"),
    "player_1": ("Aria", "hero-guid-0001"),
    "loc_3": ("someone", ""),  # hidden from this actor: the generic word, no mention
    "Old Mill": ("Old Mill", "/Game/Maps/Mill"),  # a display-name alias
    "Old Mill Keeper": ("Old Mill Keeper", "BP_Keeper_C_9"),
}
LITERALS = ["Old Mill", "Old Mill Keeper"]


def lookup(alias: str) -> tuple[str, str] | None:
    return NAMES.get(alias)


def run(chunks: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """Feed the chunks; (the text handed out, [(entity_id, named text)] in order)."""
    d = Dealiaser(lookup, LITERALS)
    pieces: list[Piece] = [p for c in chunks if (p := d.feed(c)) is not None]
    if (last := d.flush()) is not None:
        pieces.append(last)
    named = [(m.entity_id, p.text[m.start : m.start + m.length]) for p in pieces for m in p.mentions]
    return "".join(p.text for p in pieces), named


# Segments: plain words (never an alias, never touching one), aliases, and near misses.
WORDS = ["Halt", "the", "npc", "npc_", "npc_0", "npc_99", "player", "xnpc_1", "loc", "Old", "Mill", "it's", "Zoë"]
SEPARATORS = [" ", ", ", "! ", ". ", "\n", "'"]
segments = st.lists(
    st.tuples(st.sampled_from([*WORDS, *NAMES]), st.sampled_from(SEPARATORS)), min_size=1, max_size=14
)


def expected(parts: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """The reference, built from the segments, not by the code under test. Separators
    keep segments apart, except that "Old" + " " + "Mill" spells the alias "Old Mill"."""
    text, named = [], []
    i = 0
    while i < len(parts):
        word, sep = parts[i]
        if word == "Old" and sep == " " and i + 1 < len(parts) and parts[i + 1][0] == "Mill":
            word, sep = "Old Mill", parts[i + 1][1]
            i += 1
        shown, eid = NAMES.get(word, (word, ""))
        if eid:
            named.append((eid, shown))
        text.append(shown + sep)
        i += 1
    return "".join(text), named


@settings(max_examples=300, deadline=None)
@given(parts=segments, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30))
def test_any_chunk_split_gives_the_same_text_and_mentions(parts, cuts) -> None:
    full = "".join(w + s for w, s in parts)
    bounds = sorted({0, len(full), *(c % (len(full) + 1) for c in cuts)})
    chunks = [full[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert run(chunks) == expected(parts)
    assert run([full]) == expected(parts)


def test_an_alias_split_across_chunks_never_reaches_the_game() -> None:
    text, named = run(["Halt, pla", "yer_", "1! npc_1", "2 and npc_1", " run."])
    assert text == "Halt, Aria! Zoë the Tall and Grub run."
    assert named == [("hero-guid-0001", "Aria"), ("BP_Giant_C_12", "Zoë the Tall"), ("BP_Goblin_C_1", "Grub")]


def test_only_a_possible_alias_is_held_back() -> None:
    d = Dealiaser(lookup, LITERALS)
    assert d.feed("The goblin ") == Piece("The goblin ")
    assert d.feed("waves at npc") == Piece("waves at ")  # "npc" may become npc_1
    assert d.feed("s.") == Piece("npcs.")  # it did not
    assert d.feed("Then npc_1", sentence_end=False) == Piece("Then ")
    piece = d.flush()
    assert piece is not None and piece.text == "Grub" and piece.mentions[0].entity_id == "BP_Goblin_C_1"


def test_sentence_end_waits_for_held_text() -> None:
    d = Dealiaser(lookup, LITERALS)
    assert d.feed("Run, npc_1", sentence_end=True) == Piece("Run, ", False)  # the end is not here yet
    piece = d.feed("!", sentence_end=True)
    assert piece is not None and (piece.text, piece.sentence_end) == ("Grub!", True)
    assert [(m.entity_id, m.start, m.length) for m in piece.mentions] == [("BP_Goblin_C_1", 0, 4)]


def test_whole_text() -> None:
    piece = Dealiaser(lookup, LITERALS).whole("npc_1 meets the Old Mill Keeper at loc_3.")
    assert piece.text == "Grub meets the Old Mill Keeper at someone."
    assert [(m.entity_id, piece.text[m.start : m.start + m.length]) for m in piece.mentions] == [
        ("BP_Goblin_C_1", "Grub"),
        ("BP_Keeper_C_9", "Old Mill Keeper"),
    ]


def test_what_an_alias_reads_as_for_the_game() -> None:
    """Projection.display, the de-aliaser's lookup, on a world built by the state engine."""
    s = leak_tavern()
    apply(s, o.UpsertEntity(Entity(id="BP_Rat_C_0000000555", kind="character", location_id="LOC_Tavern_0001")))
    by_id = s.aliases.by_id
    p = Projection(s, "BP_Goblin_C_2147483647")
    assert p.display(by_id["9b2d5c1e-hero-0000-0000-000000000001"]) == ("Hero", "9b2d5c1e-hero-0000-0000-000000000001")
    assert p.display(by_id["BP_Rat_C_0000000555"]) == ("someone", "BP_Rat_C_0000000555")  # no name set
    assert p.display(by_id["BP_Spy_C_0000000099"]) == ("someone", "")  # hidden: not named, not mentioned
    assert p.display(by_id["LOC_Forest_0002"]) == ("somewhere", "")  # not perceived from the tavern
    assert p.display("BP_Goblin_C_2147483647") is None  # no handle: left as the model wrote it
    # A handle never issued (the model made it up) still never reaches the screen.
    assert p.display("npc_99") == ("someone", "") and p.display("loc_42") == ("somewhere", "")
    assert p.display("item_7") == ("something", "") and p.display("faction_3") == ("something", "")
    chest = by_id["BP_Chest_C_0000000777"]
    apply(s, o.RemoveEntity("BP_Chest_C_0000000777"))
    assert Projection(s, "BP_Goblin_C_2147483647").display(chest) == ("something", "")
