"""What ReadTranscript shows for text it has no run's rendering of (a compaction
summary, an entry recorded before entries kept theirs): aliases as the actor's
projection names them; the narrator names what its text names, never a hidden
entity (issue 23, item 6)."""

from __future__ import annotations

from world import HIDDEN, World

from sidecar.context.transcripts import Shown
from sidecar.state.model import TranscriptEntry, TranscriptSummary


def session():  # type: ignore[no-untyped-def]
    w = World().entity("inn", "location", "The Flagon").entity("npc", name="Maerwyn", at="inn")
    w = w.entity("pc", "player", "Aren", at="inn").entity("spy", name="Vess", at="inn", visibility=HIDDEN)
    return w.entity("far", name="Hollis", at="").session()


def test_an_actor_sees_what_it_perceives_by_name_and_the_rest_generically() -> None:
    s = session()
    npc, pc, far = (s.aliases.by_id[i] for i in ("npc", "pc", "far"))
    piece = Shown(s, "npc").text(f"{npc} waves at {pc}.")
    assert piece.text == "Maerwyn waves at Aren."
    assert [m.entity_id for m in piece.mentions] == ["npc", "pc"]
    old = TranscriptEntry(role="actor", text=f"{pc} nods.")  # recorded without `shown`
    assert Shown(s, "npc").entry(old).text == "Aren nods."
    assert Shown(s, "npc").entry(TranscriptEntry(role="player", text=f"I am {pc}.")).text == f"I am {pc}."
    assert far in s.aliases.by_alias


def test_the_narrators_summary_names_what_it_names_but_never_a_hidden_entity() -> None:
    s = session()
    npc, spy = s.aliases.by_id["npc"], s.aliases.by_id["spy"]
    s.summaries[""] = TranscriptSummary(text=f"{npc} haggled while {spy} listened.", summarised=4)
    piece = Shown(s, "").text(s.summaries[""].text)
    assert piece.text.startswith("Maerwyn haggled while ") and "Vess" not in piece.text
    assert spy not in piece.text and [m.entity_id for m in piece.mentions] == ["npc"]
