"""The game moment (timeline, tick, calendar) is suppressed from prompts; when the
game writes a suppressed part into free text anyway, the leak guard refuses to
send the request (docs/privacy.md, Coordinates and the game moment), and an exposed part passes."""

from __future__ import annotations

import grpc
from test_agent_run import collect, scripted_config

from sidecar.client import error_reason
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import session_service_pb2 as sspb
from sidecar.v1 import types_pb2 as tpb

TICK = 48213377


def run_at_tick(text: str) -> apb.RunRequest:
    return apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text=text),
                          moment=tpb.GameMoment(tick=TICK, timeline="Timeline_Main_07"))


async def test_suppressed_moment_in_game_text_is_blocked(make_server) -> None:
    running = await make_server(scripted_config())
    await running.client.open_session("g1")
    events, err = await collect(running.client, run_at_tick(f"At frame {TICK} the door opens."))
    assert isinstance(err, grpc.aio.AioRpcError)
    assert err.code() == grpc.StatusCode.INTERNAL and error_reason(err) == "PRIVACY_LEAK_BLOCKED"
    assert str(TICK) not in err.details()
    assert not any(e.HasField("text") for e in events)
    # Without the tick in the text the same moment is fine: it is simply left out.
    events, err = await collect(running.client, run_at_tick("The door opens."))
    assert err is None and events[-1].HasField("finished")


async def test_exposed_tick_may_reach_the_model(make_server) -> None:
    running = await make_server(scripted_config())
    await running.client.open_session("g1", expose_moment=sspb.MomentExposure(tick=True))
    events, err = await collect(running.client, run_at_tick(f"At frame {TICK} the door opens."))
    assert err is None and events[-1].HasField("finished")
