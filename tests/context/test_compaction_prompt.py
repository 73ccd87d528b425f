"""The summary request of a transcript compaction (issue 23): projected like a
prompt (no engine ID), within the summary model's window, never splitting an
input from its reply; the summary bounded at a sentence end."""

from __future__ import annotations

from ctxhelpers import tiktoken_counter
from world import World

from sidecar.context.compaction import bound_summary, fold_count, summary_messages
from sidecar.projection import Projection
from sidecar.state.model import TranscriptEntry, TranscriptSummary

NPC, PC = "BP_Merchant_C_0000001", "PLAYER_0000001"


def entries(n: int) -> list[TranscriptEntry]:
    out = []
    for i in range(n):
        out.append(TranscriptEntry("player", f"Did {NPC} see the caravan {i}?", PC))
        out.append(TranscriptEntry("actor", f"npc_1 saw caravan {i} leave at dawn.", NPC))
    return out


def session():  # type: ignore[no-untyped-def]
    w = World().entity("inn", "location", "Inn").entity(NPC, name="Maerwyn", at="inn")
    return w.entity(PC, "player", "Aren", at="inn").session()


def test_the_kept_part_starts_on_an_input() -> None:
    log = entries(10)
    assert fold_count(log, 4) == 16 and log[16].role == "player"
    assert fold_count(log, 5) == 16  # 15 would keep a reply without its line
    assert fold_count(log, 40) == 0


def test_the_request_is_projected_and_fits_the_window() -> None:
    s = session()
    s.summaries[NPC] = TranscriptSummary(text="npc_1 sold player_1 a lamp.", summarised=6)
    proj = Projection(s, NPC)
    count = tiktoken_counter()
    whole, n = summary_messages(s, proj, entries(10), 2000, count, 100_000)
    assert n == 20
    text = "\n".join(m["content"] for m in whole)
    assert NPC not in text and PC not in text and "npc_1 sold player_1 a lamp." in text
    assert "at most 2000 characters" in whole[0]["content"]
    small, k = summary_messages(s, proj, entries(10), 2000, count, 300)
    assert 0 < k < 20 and k % 2 == 0  # whole exchanges only
    assert sum(count(m["content"]) for m in small) + 16 <= 300
    assert summary_messages(s, proj, entries(10), 2000, count, 50)[1] == 0


def test_a_long_summary_is_cut_at_a_sentence_end() -> None:
    text = "First thing happened. Second thing happened!  Third   thing went on and on " + "and on " * 50
    assert bound_summary(text, 60) == "First thing happened. Second thing happened!"
    assert bound_summary("word " * 100, 52).endswith("…") and len(bound_summary("word " * 100, 52)) <= 53
    assert bound_summary(" short  one ", 200) == "short one"
