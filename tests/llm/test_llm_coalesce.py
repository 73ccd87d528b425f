"""Coalescing: first text at once, later text held at most one window,
sentence ends split and marked, nothing lost or reordered."""

from __future__ import annotations

import asyncio
import random

from sidecar.llm.coalesce import Coalescer, TextChunk, split_sentences


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(window_s: float = 0.05) -> tuple[Coalescer, list[TextChunk], Clock]:
    out: list[TextChunk] = []
    clock = Clock()
    return Coalescer(window_s, out.append, clock), out, clock


async def test_first_text_goes_out_at_once() -> None:
    c, out, _ = make()
    c.feed("The")
    assert out == [TextChunk("The", False)]


async def test_text_within_the_window_is_held_then_sent_by_the_timer() -> None:
    c, out, clock = make(window_s=0.02)
    c.feed("The")
    clock.now += 0.001
    c.feed(" goblin")
    c.feed(" runs")
    assert [x.text for x in out] == ["The"]  # held, not dropped
    await asyncio.sleep(0.1)  # the window timer fires on the loop
    assert [x.text for x in out] == ["The", " goblin runs"]


async def test_text_after_a_quiet_window_goes_out_at_once() -> None:
    c, out, clock = make(window_s=0.02)
    c.feed("The")
    clock.now += 1.0
    c.feed(" end")
    assert [x.text for x in out] == ["The", " end"]


async def test_a_sentence_end_ends_a_delta_and_is_marked() -> None:
    c, out, _ = make()
    c.feed("Hi")
    c.feed(" there. How are")
    assert out[1] == TextChunk(" there.", True)
    c.flush()
    assert "".join(x.text for x in out) == "Hi there. How are"
    assert out[-1].sentence_end is False


async def test_several_sentences_in_one_chunk_each_get_a_marker() -> None:
    c, out, _ = make()
    c.feed('He shouts "Run!" She runs. Why? ')
    c.flush()
    ends = [x.text for x in out if x.sentence_end]
    assert ends == ['He shouts "Run!"', " She runs.", " Why?"]


async def test_abbreviations_and_initials_do_not_end_sentences() -> None:
    sentences, rest = split_sentences("Dr. Smith met J. R. Tolkien at St. Ives. Then ")
    assert sentences == ["Dr. Smith met J. R. Tolkien at St. Ives."]
    assert rest == " Then "


async def test_a_trailing_full_stop_waits_for_the_next_character() -> None:
    c, out, clock = make()
    c.feed("Well")
    clock.now += 1.0
    c.feed(", pi is 3.")
    assert out == [TextChunk("Well")]  # ambiguous: held (at most a window)
    c.feed("14 exactly")
    c.flush()
    assert all(not x.sentence_end for x in out)
    assert "".join(x.text for x in out) == "Well, pi is 3.14 exactly"

    c2, out2, clock2 = make()
    c2.feed("So")
    clock2.now += 1.0
    c2.feed(" it ends.")
    c2.feed(" Next")
    assert out2[1] == TextChunk(" it ends.", True)


async def test_the_first_words_never_wait_for_the_timer_only_an_ambiguous_stop_does() -> None:
    c, out, _ = make()
    c.feed("Pi is 3.")
    # Sent before feed returned (no timer ran): only the full stop waits to be told apart.
    assert out == [TextChunk("Pi is 3", False)]
    c.feed("14 exactly")
    c.flush()
    assert "".join(x.text for x in out) == "Pi is 3.14 exactly"
    assert all(not x.sentence_end for x in out)

    c2, out2, _ = make()
    c2.feed("It ends.")
    c2.feed(" Next")
    assert out2 == [TextChunk("It ends", False), TextChunk(".", True)]


async def test_a_trailing_full_stop_is_taken_as_an_end_when_the_window_closes() -> None:
    c, out, clock = make(window_s=0.01)
    c.feed("So")
    clock.now += 1.0
    c.feed(" it ends.")
    await asyncio.sleep(0.08)
    assert out == [TextChunk("So"), TextChunk(" it ends.", True)]


async def test_flush_marks_a_final_sentence() -> None:
    c, out, _ = make()
    c.feed("Done")
    c.feed(" now!")
    c.flush()
    assert out[-1].sentence_end and "".join(x.text for x in out) == "Done now!"


async def test_discard_returns_what_was_held_and_cancels_the_timer() -> None:
    c, out, clock = make(window_s=0.01)
    c.feed("a")
    c.feed("b")
    assert c.discard() == "b"
    await asyncio.sleep(0.05)
    assert [x.text for x in out] == ["a"]


async def test_random_splits_never_lose_or_reorder_text() -> None:
    rng = random.Random(7)
    text = (
        'The torch gutters. Dr. Vell draws 3.5 coins from a pouch! "Enough?" he asks. '
        "Nobody answers… The wind howls; the door creaks. Mr. Oak sighs."
    )
    for _ in range(200):
        c, out, clock = make(window_s=rng.choice([0.0, 0.016, 10.0]))
        i = 0
        while i < len(text):
            n = rng.randint(1, 7)
            c.feed(text[i : i + n])
            clock.now += rng.choice([0.0, 0.005, 0.05])
            i += n
        c.flush()
        assert "".join(x.text for x in out) == text
        assert all(x.text for x in out)
        for x in out:
            if x.sentence_end:
                assert x.text.rstrip("\"'”’)]»")[-1] in ".!?…"
        marked = sum(x.sentence_end for x in out)
        assert marked == 7  # Dr., 3.5 and Mr. are not ends
