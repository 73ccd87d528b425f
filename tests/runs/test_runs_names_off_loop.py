"""The table that turns aliases back into names (Dealiaser's) is built once per run,
with the prompt in the run's worker thread, not on the event loop: over 1,000
display-name aliases it takes ~20 ms, and a run used to build it two or three times
on the loop (the streamed text, the recorded reply, a decision's message), holding
every other session's calls (issue 24, item 3)."""

from __future__ import annotations

import threading

from fakes.runs_rig import drain

from sidecar.projection import dealias


async def test_a_run_builds_its_alias_table_once_off_the_loop(make_rig, monkeypatch) -> None:
    built: list[str] = []
    real_init = dealias.AliasTable.__init__

    def counting(self: dealias.AliasTable, literal_aliases=()) -> None:  # type: ignore[no-untyped-def]
        built.append(threading.current_thread().name)
        real_init(self, literal_aliases)

    monkeypatch.setattr(dealias.AliasTable, "__init__", counting)
    rig = make_rig()
    await rig.session()
    for text in ("A goblin bursts in.", "The goblin trips."):
        built.clear()
        out = await drain(rig.submit(text))
        assert out.error is None and out.text
        assert len(built) == 1, built  # shared by the stream, the recorded reply and ReadTranscript's text
        assert built[0] != threading.main_thread().name  # the loop runs on the main thread here


async def test_a_decisions_retry_prompt_is_built_off_the_loop_inside_the_gate(make_rig, monkeypatch) -> None:
    """The retry prompt may rebuild the whole prompt smaller (seconds over a big world):
    it runs in a worker thread, as the first prompt does, while the session's gate keeps
    writers out (the session is read live)."""
    from sidecar.config import RunsConfig
    from sidecar.context.contract import ActionOption, DecisionInput
    from sidecar.errors import InvalidChoice
    from sidecar.runs import attempts

    rig = make_rig(runs=RunsConfig(decision_attempts=2))
    await rig.session(actors=1)
    where: list[tuple[str, tuple[int, int]]] = []
    real = attempts.retry_messages

    def recording(context, prepared, rejected):  # type: ignore[no-untyped-def]
        where.append((threading.current_thread().name, rig.app.gate.busy("s1")))
        return real(context, prepared, rejected)

    monkeypatch.setattr(attempts, "retry_messages", recording)
    decision = DecisionInput(situation="Nothing happens. #garbage",
                             options=(ActionOption("a", "Wait"), ActionOption("b", "Leave")))
    out = await drain(rig.submit(actor_id="actor-000", run_input=decision))
    assert isinstance(out.error, InvalidChoice)
    assert len(where) == 1  # one retry between the two attempts
    thread, (readers, _writers) = where[0]
    assert thread != threading.main_thread().name and readers == 1
