"""A model that will not stop (issue 24, item 4): the sidecar enforces the output
limit itself, cuts what it relays into bounded deltas, and reads the model only as
fast as the game reads the run. The provider is the fake OpenAI-compatible server
(tests/fakes/openai_server.py, "runaway": it ignores max_tokens and streams 400,000
characters a chunk) on the sidecar's own SSE transport, or the scripted model."""

from __future__ import annotations

import asyncio

from fakes.openai_server import FakeOpenAI
from fakes.runs_rig import drain
from waits import eventually

from sidecar.config import ScriptConfig
from sidecar.llm.call import output_ceiling
from sidecar.llm.coalesce import MAX_CHUNK_CHARS, Coalescer, TextChunk
from sidecar.llm.types import Limits
from sidecar.projection.dealias import Mention, Piece
from sidecar.runs.attempts import bounded_pieces
from sidecar.runs.handle import MAX_QUEUED_CHARS


async def test_a_provider_that_ignores_max_tokens_is_cut_at_the_ceiling(make_rig) -> None:
    async with FakeOpenAI(runaway_bytes=40_000_000) as fake:
        rig = make_rig(model="openai/runaway", api_base=fake.base_url, max_output_tokens=256)
        await rig.session()
        out = await drain(rig.submit("The storm breaks."))
        assert out.error is None and out.kinds()[-1] == "Finished"
        assert out.events[-1].finish_reason == "length"
        # What reached the game is within the ceiling (old code: it read on, until the run timed out)...
        assert out.text and len(out.text.encode()) <= output_ceiling(256) == 256 * 16
        # ...in bounded deltas (old code: 400,000 characters each)...
        assert max(len(e.text) for e in out.events if type(e).__name__ == "Text") <= MAX_CHUNK_CHARS
        # ...and the upstream call was closed, not read to its end.
        await eventually(lambda: fake.seen.disconnects, what="the provider saw the client leave")
        assert fake.seen.completed == 0 and fake.seen.bytes_sent < 40_000_000
        usage = next(e for e in out.events if type(e).__name__ == "UsageReport")
        assert 0 < usage.completion_tokens <= output_ceiling(256) // 4
        transcript = rig.app.store.get("s1").transcripts[""][-1]
        assert transcript.text and not transcript.interrupted


async def test_a_reply_within_the_limit_is_never_cut(make_rig) -> None:
    # The scripted model honours max_tokens (one word a token): a provider's tokenizer
    # may fit far more text in a token than cl100k_base, and the ceiling leaves it room.
    reply = " ".join(["extraordinarily"] * 40) + "."
    rig = make_rig(script=ScriptConfig(replies=[reply], chunk_delay_ms=0), max_output_tokens=40)
    await rig.session()
    out = await drain(rig.submit("go"))
    assert out.text == reply and out.events[-1].finish_reason == "stop"


async def test_a_slow_reader_slows_the_model_down(make_rig) -> None:
    # 400 KB of reply, streamed with no pause: the old run read it all into its queue at once.
    reply = "The rain keeps falling on the old roofs. " * 10_000
    script = ScriptConfig(replies=[reply], chunk_chars=10_000, chunk_delay_ms=0)
    rig = make_rig(script=script, max_output_tokens=10_000_000)
    await rig.session()
    handle = rig.submit("go", limits=Limits(max_output_tokens=10_000_000))
    await eventually(lambda: handle.done or handle.queued_chars > MAX_QUEUED_CHARS, what="the queue filled")
    for _ in range(100):  # nobody reads: the run has every chance to go on
        await asyncio.sleep(0)
    assert not handle.done
    # What the run took from the model is what the game has not read yet, bounded.
    assert len(handle.progress.text) <= MAX_QUEUED_CHARS + 4 * MAX_CHUNK_CHARS + 10_000
    out = await drain(handle)
    assert out.error is None and out.text == reply.rstrip() and out.events[-1].finish_reason == "stop"


def test_the_coalescer_never_emits_a_chunk_over_its_bound() -> None:
    class Clock:
        def now(self) -> float:
            return 0.0

        def call_later(self, delay_s: float, callback: object) -> object:
            return self

        def cancel(self) -> None:
            pass

    sent: list[TextChunk] = []
    coalescer = Coalescer(0.016, sent.append, Clock(), max_chars=100)  # type: ignore[arg-type]
    text = "word " * 100 + "A very long sentence " * 30 + "ends here. " + "tail " * 50
    for start in range(0, len(text), 333):
        coalescer.feed(text[start : start + 333])
    coalescer.flush()
    assert "".join(c.text for c in sent) == text
    assert max(len(c.text) for c in sent) <= 100
    # The sentence end is on the chunk that ends the sentence, not on its first part.
    ends = [c for c in sent if c.sentence_end]
    assert ends and all(c.text.endswith((". ", ".")) for c in ends)


def test_a_delta_is_cut_around_names_not_inside_them() -> None:
    name = "Grub the Unwashed"
    text = ("x" * 8 + name) * 10
    mentions = tuple(Mention("BP_Grub", i * (8 + len(name)) + 8, len(name)) for i in range(10))
    pieces = bounded_pieces(Piece(text, True, mentions), 30)
    assert "".join(p.text for p in pieces) == text
    assert all(len(p.text) <= 30 for p in pieces) and pieces[-1].sentence_end
    assert not any(p.sentence_end for p in pieces[:-1])
    for p in pieces:
        assert all(p.text[m.start : m.start + m.length] == name for m in p.mentions)
    assert sum(len(p.mentions) for p in pieces) == 10
    # A name longer than the bound is a delta of its own, whole.
    long_name = "N" * 50
    pieces = bounded_pieces(Piece("ab " + long_name + " cd", False, (Mention("BP_N", 3, 50),)), 30)
    assert [p.text for p in pieces] == ["ab ", long_name, " cd"]
    assert pieces[1].mentions == (Mention("BP_N", 0, 50),)
