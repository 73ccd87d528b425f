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
    whole, n, _ = summary_messages(s, proj, entries(10), 2000, count, 100_000)
    assert n == 20
    text = "\n".join(m["content"] for m in whole)
    assert NPC not in text and PC not in text and "npc_1 sold player_1 a lamp." in text
    assert "at most 2000 characters" in whole[0]["content"]
    small, k, _ = summary_messages(s, proj, entries(10), 2000, count, 300)
    assert 0 < k < 20 and k % 2 == 0  # whole exchanges only
    assert sum(count(m["content"]) for m in small) + 16 <= 300
    assert summary_messages(s, proj, entries(10), 2000, count, 50)[1] == 0


def test_a_long_summary_is_cut_at_a_sentence_end() -> None:
    text = "First thing happened. Second thing happened!  Third   thing went on and on " + "and on " * 50
    assert bound_summary(text, 60) == "First thing happened. Second thing happened!"
    assert bound_summary("word " * 100, 52).endswith("…") and len(bound_summary("word " * 100, 52)) <= 53
    assert bound_summary(" short  one ", 200) == "short one"


def test_events_about_to_leave_past_the_cap_are_folded_in() -> None:
    """Issue 31, item 3: world events past the cap were dropped and never summarised. The
    leaving ones the actor perceived go into its summary request, projected, before any
    of them leaves; a summary that holds them is not asked for them again."""
    from sidecar.config import StateLimits
    from sidecar.context.compaction import LEAVING_SHARE, events_to_fold, leaving_events

    s = session()
    limits = StateLimits(max_events=16)
    World().entity("yard", "location", "Yard").onto(s, limits)
    for i in range(17):  # one past the cap
        at = "yard" if i % 4 == 3 else "inn"  # the yard's are not perceived from the inn
        World().event(f"Event {i}: {PC} hears a bell.", at=at).onto(s, limits)
    proj = Projection(s, NPC)
    assert s.world.events_dropped == 1 and leaving_events(s) == 1 + 16 // LEAVING_SHARE
    events, through = events_to_fold(s, proj)
    assert [n for n, _ in events] == [1, 2, 4] and through == 5  # 3 happened in the yard
    count = tiktoken_counter()
    messages, turns, folded = summary_messages(s, proj, entries(2), 2000, count, 100_000, events)
    text = messages[1]["content"]
    assert (turns, folded) == (4, 3) and "Event: Event 1: player_1 hears a bell." in text and PC not in text
    assert "Event 3:" not in text
    # Held by the summary: not again.
    s.summaries[NPC] = TranscriptSummary("Bells rang.", events_through=through, events_summarised=3)
    assert events_to_fold(s, proj) == ([], through)
    # Not due while the oldest unfolded one is far from the edge.
    fresh = session()
    for i in range(17):
        World().event(f"Event {i}.", at="inn").onto(fresh, limits)
    fresh.summaries[NPC] = TranscriptSummary("x", events_through=3)  # the edge is at 1, "soon" below 3
    assert events_to_fold(fresh, Projection(fresh, NPC))[0] == []
