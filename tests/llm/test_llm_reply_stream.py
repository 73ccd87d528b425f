"""A reply's text as its tokens come (sidecar/llm/reply_stream.py): whatever the pieces a
reply's bytes arrive in, what is shown is the reply up to its first stop sequence, no
character is ever split, and no part of a stop sequence is ever shown."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sidecar.llm.reply_stream import ReplyText

STOPS = ("\n\n", "Reply:", "<end_of_turn>")


def _show(pieces: list[bytes], stops: tuple[str, ...] = STOPS) -> tuple[list[str], bool]:
    reply = ReplyText(stops)
    shown = [reply.add(piece) for piece in pieces]
    shown.append(reply.finish())
    return shown, reply.stopped


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@given(
    st.text(alphabet=st.sampled_from(list("ab \né€😀Rply:<>_endoftur")), max_size=60),
    st.lists(st.integers(min_value=0, max_value=200), max_size=30),
)
def test_whatever_the_pieces_the_reply_ends_at_its_first_stop(text: str, cuts: list[int]) -> None:
    shown, stopped = _show(_cut(text.encode(), cuts))
    found = [i for i in (text.find(s) for s in STOPS) if i >= 0]
    assert "".join(shown) == (text[: min(found)] if found else text)
    assert stopped == bool(found)
    for part in shown:  # each piece shown is whole characters (it encodes back as it came)
        assert part.encode().decode() == part


def test_a_character_split_across_tokens_waits_for_its_last_byte() -> None:
    euro = "€".encode()
    reply = ReplyText(STOPS)
    assert reply.add(b"5 " + euro[:1]) == "5 "
    assert reply.add(euro[1:2]) == ""
    assert reply.add(euro[2:] + b".") == "€."


def test_what_may_begin_a_stop_is_held_until_the_next_token_tells() -> None:
    reply = ReplyText(STOPS)
    assert reply.add(b"The door opens.\n") == "The door opens."
    assert reply.add(b"It creaks.") == "\nIt creaks."  # not "\n\n": shown after all
    assert reply.add(b" Rep") == " "
    assert reply.add(b"ly: no") == "" and reply.stopped  # a stop: never shown, nor what follows
    assert reply.add(b"more") == "" and reply.finish() == ""


def test_the_end_shows_what_was_held() -> None:
    reply = ReplyText(STOPS)
    assert reply.add(b"Aye.<end_of") == "Aye."
    assert reply.finish() == "<end_of" and not reply.stopped
