"""What a decision shows while it streams (docs/runs.md, The event stream): the
characters of its "message" string as they arrive, decoded, however the stream
splits them; never the JSON, the notes or the reasoning before them."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sidecar.prompts.decisions import SpokenStream


def streamed(reply: str, cuts: list[int]) -> str:
    spoken, start, out = SpokenStream(), 0, []
    for cut in sorted(set(c % (len(reply) + 1) for c in cuts)) + [len(reply)]:
        out.append(spoken.feed(reply[start:cut]))
        start = cut
    return "".join(out)


@given(
    message=st.text(max_size=60),
    notes=st.text(max_size=20),
    before=st.text(alphabet=st.characters(blacklist_characters='"'), max_size=30),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_the_message_streams_whole_however_the_reply_is_split(
    message: str, notes: str, before: str, ascii_only: bool, cuts: list[int]
) -> None:
    body = json.dumps({"action": 2, "message": message, "notes": notes}, ensure_ascii=ascii_only)
    shown = streamed(before + " " + body, cuts)
    # Line breaks and tabs read as spaces (the accepted message's whitespace is collapsed).
    expected = message.translate({ord("\n"): " ", ord("\r"): " ", ord("\t"): " ", ord("\b"): None, ord("\f"): None})
    if any(0xD800 <= ord(c) < 0xE000 for c in message):  # lone surrogates: not text a screen can show
        return
    assert shown == expected


def test_reasoning_json_keys_and_notes_never_show() -> None:
    reply = 'I should flee. {"action": 1, "notes": "wolves bite", "message": "Run!"}'
    assert streamed(reply, [3, 20, 41, 60]) == "Run!"
    assert streamed("I cannot decide. There is no choice.", [5]) == ""


def test_escapes_split_across_pieces_are_decoded_once_whole() -> None:
    reply = '{"action": 1, "message": "Caf\\u00e9 \\"open\\" \\ud83c\\udf7a\\nnow"}'
    for size in (1, 2, 5):
        spoken = SpokenStream()
        text = "".join(spoken.feed(reply[i : i + size]) for i in range(0, len(reply), size))
        assert text == 'Café "open" 🍺 now'
