"""The leak guard refuses any outgoing request that holds an engine ID."""

from __future__ import annotations

import logging
import uuid

import pytest
from minirender import render
from world import leak_tavern

from sidecar.errors import PrivacyLeakBlocked
from sidecar.llm.guard import check_outgoing
from sidecar.projection import Projection
from sidecar.state.model import Moment

GOBLIN = "BP_Goblin_C_2147483647"


def test_projected_prompt_passes_and_raw_id_is_blocked(caplog):
    s = leak_tavern()
    p = Projection(s, GOBLIN)
    messages = render(p, f"{GOBLIN} looks around")
    check_outgoing(messages, p.engine_ids)  # nothing raised: the projection did its job
    leaky = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"id={GOBLIN}"}]
    with caplog.at_level(logging.ERROR, logger="sidecar.llm.guard"), pytest.raises(PrivacyLeakBlocked) as err:
        check_outgoing(leaky, p.engine_ids)
    assert GOBLIN not in str(err.value)
    assert err.value.metadata == {"message_index": "3", "kind": "engine_id"}
    assert err.value.code == "INTERNAL" and err.value.reason == "PRIVACY_LEAK_BLOCKED"
    (record,) = caplog.records
    assert record.fields == {"message_index": 3, "role": "user", "key": "content", "kind": "engine_id"}
    assert GOBLIN not in record.getMessage() and GOBLIN not in repr(record.fields)


@pytest.mark.parametrize(
    "leak",
    [
        "BP_Chest_C_0000000777",
        "see /Game/Maps/World.World",
        "ITEM_Ring_ÿ_0001!",
        "9b2d5c1e-hero-0000-0000-000000000001",
        "LORE_and_BP_Wolf_C_0000000042",  # glued to other text
        "save-slot-7f3a",  # (not in engine_ids unless passed; see below)
    ],
)
def test_every_kind_of_id_is_caught(leak):
    s = leak_tavern()
    ids = Projection(s, "").engine_ids | {"save-slot-7f3a"}
    with pytest.raises(PrivacyLeakBlocked):
        check_outgoing([{"role": "user", "content": leak}], ids)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "name": "GUID-0001-abcd", "content": "hi"},
        {"role": "user", "content": [{"type": "text", "text": "about GUID-0001-abcd"}]},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": '{"t": "GUID-0001-abcd"}'}}]},
    ],
)
def test_every_part_of_a_message_is_checked(message):
    with pytest.raises(PrivacyLeakBlocked):
        check_outgoing([message], ["GUID-0001-abcd"])


def test_short_and_word_ids_do_not_cause_false_positives():
    ids = ["1", "a", "npc", "door", "Goblin", "1999", "main"]
    check_outgoing(
        [{"role": "user", "content": "Choose option 1: open a door. The Goblin in the main hall, 1999 gold. npc_1"}],
        ids,
    )


def test_moment_parts_are_caught_unless_blank():
    moment = Moment(timeline="timeline-7f3a9", tick=123456789, calendar="3rd of Frostmonth")
    for text in ("at tick 123456789", "on timeline-7f3a9", "it is 3rd of Frostmonth"):
        with pytest.raises(PrivacyLeakBlocked) as err:
            check_outgoing([{"role": "user", "content": text}], [], moment=moment)
        assert err.value.metadata["kind"] == "moment"
    # An exposed calendar is blanked by Projection.guard_moment and then allowed.
    check_outgoing([{"role": "user", "content": "it is 3rd of Frostmonth"}], [], moment=Moment(tick=123456789))
    # Small ticks are ordinary numbers.
    check_outgoing([{"role": "user", "content": "5 goblins, 12 gold"}], [], moment=Moment(tick=5))
    check_outgoing([{"role": "user", "content": "anything"}], [], moment=Moment())


def test_ten_thousand_ids():
    ids = frozenset(str(uuid.UUID(int=i * 7919 + 1)) for i in range(10_000))
    clean = [{"role": "system", "content": "You are npc_3. " * 200}, {"role": "user", "content": "hello"}]
    check_outgoing(clean, ids)
    check_outgoing(clean, ids)  # the cached matcher
    one = sorted(ids)[5000]
    with pytest.raises(PrivacyLeakBlocked):
        check_outgoing([*clean, {"role": "user", "content": f"about {one}"}], ids)
