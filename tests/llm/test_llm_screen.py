"""sidecar.llm.screen: what any model's reply may show a player (issue 29, item 6): no
markup, no role label, no next turn; the same text however the reply was cut into pieces."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.llm.screen import ScreenText, screened

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "bench"))
from voice_metrics import label_hits, markup_hits  # noqa: E402  (the benchmark's own checks)

CASES = [
    # (reply as a model wrote it, a spoken line?, what the player reads)
    ("The door bursts open and rain pours in.", False, "The door bursts open and rain pours in."),
    ("Narrator: The door bursts open. Rain pours in.", False, "The door bursts open. Rain pours in."),
    ("**Bram:** Keep your voice down.", True, "Keep your voice down."),
    ("Bram Holt: Keep your voice down.", True, "Keep your voice down."),
    ("*leans closer* Keep your voice down, Mira.", True, "Keep your voice down, Mira."),
    ("The **old** door creaks. *Really* loud.", False, "The old door creaks. Really loud."),
    ("Bram nods.\nMira: Why?\nBram: Because.", False, "Bram nods."),
    ("The guard waits.\n\nThe rain falls on the roof.", False, "The guard waits. The rain falls on the roof."),
    ("Keep it down.<end_of_turn>\n<start_of_turn>user\nMore?", True, "Keep it down."),
    ("Keep it down.<|im_end|>", True, "Keep it down."),
    ("Aye, <b>that</b> one.", True, "Aye, that one."),
    ("[sighs] Fine, take the key.", True, "Fine, take the key."),
    ("At 5:30 the bell rings. It is loud.", False, "At 5:30 the bell rings. It is loud."),
    ("He said: run. Event: a door opens.", False, "He said: run."),
    ('"Keep it down," Bram says. Reply: ok', True, '"Keep it down," Bram says.'),
    ("# The Tavern\nThe fire crackles.", False, "The fire crackles."),
    ("- Bram grabs the mug.", False, "Bram grabs the mug."),
    ("`Zoë` smiles {warmly} | ok", False, "Zoë smiles warmly ok"),
    ("  \n\nThe end.", False, "The end."),
    ("Bram", True, "Bram"),
    ("Bram:", True, ""),
    ("", False, ""),
    ("3 * 4 guards wait.", False, "3 4 guards wait."),
]


@pytest.mark.parametrize(("reply", "spoken", "shown"), CASES)
def test_the_player_reads_the_reply_without_markup_labels_or_a_next_turn(reply: str, spoken: bool, shown: str) -> None:
    assert screened(reply, spoken) == shown
    # Streamed a character at a time, it reads the same.
    screen = ScreenText(spoken)
    assert "".join(screen.feed(c) for c in reply) + screen.flush() == shown


def test_a_next_turn_ends_what_is_shown() -> None:
    screen = ScreenText()
    assert screen.feed("The gate holds.") == "The gate holds"  # the end mark waits for what follows
    assert not screen.ended
    assert screen.feed("\nPlayer: and then?") == "."
    assert screen.ended and screen.feed(" More text.") == "" and screen.flush() == ""


# Text built of the pieces that make trouble: words, names, labels, markup, breaks, end marks.
_PIECES = st.sampled_from([
    "The", "door", "opens", "Bram", "Holt", "Zoë", "Event", "Reply", ":", " ", "  ", "\n", "\n\n", ".", "!", "?",
    "…", '"', "'", ",", "*", "**", "#", "`", "<", ">", "</b>", "<end_of_turn>", "[", "]", "{", "}", "|", "-",
    "5:30", "3", "he said", "_", "npc_1",
])  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXTS, st.booleans(), st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=20))
def test_any_split_of_a_reply_reads_as_the_whole(text: str, spoken: bool, sizes: list[int]) -> None:
    screen = ScreenText(spoken)
    parts, at, i = [], 0, 0
    while at < len(text):
        size = sizes[i % len(sizes)]
        parts.append(screen.feed(text[at : at + size]))
        at, i = at + size, i + 1
    assert "".join(parts) + screen.flush() == screened(text, spoken)


@settings(max_examples=400, deadline=None)
@given(_TEXTS, st.booleans())
def test_no_markup_or_label_ever_reaches_the_screen(text: str, spoken: bool) -> None:
    shown = screened(text, spoken)
    assert not markup_hits(shown) and "\n" not in shown
    assert not label_hits(shown), shown
    assert shown == shown.strip() and "  " not in shown
