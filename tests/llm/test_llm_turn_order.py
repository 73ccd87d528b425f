"""The order in which generations take turns on the embedded model (sidecar/llm/turns.py),
with generators standing in for generations and a host that records each decode: every
admitted generation in one decode a step, prompts sliced to the step's room, admission
by slots and KV cells, warm-ups only while no generation waits, a failing decode ending
only the generations in it, and closing. The real model taking turns:
tests/llm/test_llm_turns.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from local_runs import batch_rows

from sidecar.llm.turn_protocol import Turn, TurnsClosed, Work
from sidecar.llm.turns import Turns


class Host:
    def __init__(self, slots: int = 4, cells: int = 1000) -> None:
        self.slots, self.cells = slots, cells
        self.events: list[str] = []
        #: Each decode: (sequence, tokens, logits asked) per part.
        self.decodes: list[list[tuple[int, int, bool]]] = []
        self.fail_decode = False

    def capacity(self) -> tuple[int, int]:
        return self.slots, self.cells

    def decode(self, parts: list[tuple[Work, bool]]) -> list[int]:
        if self.fail_decode:
            self.fail_decode = False
            raise RuntimeError("llama_decode returned -1")
        self.decodes.append([(work.seq, len(work.tokens), logits) for work, logits in parts])
        return batch_rows(parts)

    def release(self, turn: Turn) -> None:
        self.events.append(f"release {turn.slot}")


def steps(
    name: str, n: int, log: list[str], need: int = 10, gate: threading.Event | None = None, prompt: int = 1,
    hold: tuple[int, threading.Event] | None = None,
) -> Iterator[Work | int | None]:  # fmt: skip
    """`prompt` tokens, then a token a step, `n` steps; each answer must be a row. With
    `hold` (k, event), step k holds the worker until the event is set."""
    if gate is not None:
        gate.wait(5)  # the first step (before admission) of the first turn: hold the worker
    slot = yield need
    work = Work(slot, 0, [7] * prompt)
    for i in range(n):
        log.append(f"{name}{i}")
        if hold is not None and hold[0] == i:
            hold[1].wait(5)
        row = yield work
        assert isinstance(row, int) and row >= 0
        work = Work(slot, work.pos + len(work.tokens), [i])
    return name


def _results(*turns: Turn) -> list[object]:
    return [t.future.result(timeout=5) for t in turns]


@pytest.fixture
def host() -> Iterator[Host]:
    yield Host()


def test_generations_submitted_together_share_each_decode(host: Host) -> None:
    turns, log, gate = Turns(host), [], threading.Event()
    a = turns.submit(steps("a", 3, log, gate=gate))
    b, c = turns.submit(steps("b", 3, log)), turns.submit(steps("c", 2, log))
    gate.set()
    assert _results(a, b, c) == ["a", "b", "c"]
    assert log == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2"]
    # One decode a step: all three, each in its own sequence, then the two left.
    assert host.decodes == [[(1, 1, True), (2, 1, True), (3, 1, True)]] * 2 + [[(1, 1, True), (2, 1, True)]]
    assert turns.most_at_once == 3 and turns.most_in_a_decode == 3 and turns.foreground == 0
    assert sorted(host.events) == ["release 1", "release 2", "release 3"]
    turns.close(lambda: None).result(timeout=5)


def test_a_prompt_gets_the_room_a_step_leaves_and_is_answered_once_whole(host: Host) -> None:
    turns, log, gate, go = Turns(host, batch_tokens=64, prompt_step=16), [], threading.Event(), threading.Event()
    a = turns.submit(steps("a", 8, log, gate=gate, prompt=100, hold=(2, go)))  # alone: 64 tokens a step
    gate.set()
    while "a2" not in log:  # a speaks, and holds the worker at its third token
        pass
    b = turns.submit(steps("b", 2, log, prompt=40))  # beside a speaking one: 16 a step
    go.set()
    _results(a, b)
    assert host.decodes[:2] == [[(1, 64, False)], [(1, 36, True)]]
    b_parts = [part for parts in host.decodes for part in parts if part[0] == 2]
    assert b_parts[:3] == [(2, 16, False), (2, 16, False), (2, 8, True)]
    for parts in host.decodes:  # a's token and b's slice shared the decodes
        assert sum(n for _, n, _ in parts) <= 64
    assert log.index("b1") > log.index("b0") > log.index("a2")
    turns.close(lambda: None).result(timeout=5)


def test_a_generation_waits_while_the_cells_or_slots_would_not_hold_it(host: Host) -> None:
    host.cells = 25  # two of 10 fit, not three
    turns, log, gate = Turns(host), [], threading.Event()
    a = turns.submit(steps("a", 3, log, gate=gate))
    b, c = turns.submit(steps("b", 3, log)), turns.submit(steps("c", 1, log))
    gate.set()
    _results(a, b, c)
    assert log.index("c0") > log.index("a2")  # c began once a ended
    assert log[:2] == ["a0", "b0"] and turns.most_at_once == 2

    host.slots = 1  # no slots at all: one at a time
    one = Turns(host)
    log2: list[str] = []
    gate2 = threading.Event()
    x = one.submit(steps("x", 2, log2, gate=gate2))
    y = one.submit(steps("y", 2, log2))
    gate2.set()
    _results(x, y)
    assert log2 == ["x0", "x1", "y0", "y1"]
    for t in (turns, one):
        t.close(lambda: None).result(timeout=5)


def test_a_warm_up_runs_only_while_no_generation_waits(host: Host) -> None:
    turns, log, gate = Turns(host), [], threading.Event()

    def warming() -> Iterator[int | None]:
        yield None
        done = 0
        while not turns.foreground and done < 1000:
            log.append("w")
            done += 1
            yield None
        return done

    w = turns.submit(warming(), background=True)
    assert not w.future.done() or w.future.result() > 0
    a = turns.submit(steps("a", 2, log, gate=gate))
    gate.set()
    warmed, _ = _results(w, a)
    assert 0 <= warmed < 1000 and log[-2:] == ["a0", "a1"]  # it gave way
    late = turns.submit(steps("b", 200, log))
    dropped = turns.submit(warming(), background=True)  # a generation is under way: never begun
    assert _results(late, dropped)[1] == 0
    turns.close(lambda: None).result(timeout=5)


def test_a_decode_that_fails_ends_only_the_generations_in_it(host: Host) -> None:
    turns, log, gate = Turns(host), [], threading.Event()
    a = turns.submit(steps("a", 3, log, gate=gate))
    b = turns.submit(steps("b", 3, log))
    host.fail_decode = True
    gate.set()
    for turn in (a, b):
        with pytest.raises(RuntimeError, match="returned -1"):
            turn.future.result(timeout=5)
        assert turn.steps.gi_frame is None  # closed on the worker, not left to the collector
    assert turns.submit(steps("c", 2, log)).future.result(timeout=5) == "c"  # the model goes on
    assert log.count("a0") == 1 and len(host.events) == 3  # every slot released
    turns.close(lambda: None).result(timeout=5)


def test_a_step_that_asks_for_nothing_fails_instead_of_waiting_for_ever(host: Host) -> None:
    turns, log = Turns(host), []
    empty = turns.submit(steps("e", 2, log, prompt=0))
    with pytest.raises(ValueError, match="no tokens"):
        empty.future.result(timeout=5)
    assert turns.submit(steps("a", 2, log)).future.result(timeout=5) == "a"
    turns.close(lambda: None).result(timeout=5)


def test_closing_ends_every_generation_and_refuses_new_ones(host: Host) -> None:
    turns, log = Turns(host), []
    running, ended = threading.Event(), threading.Event()

    def endless() -> Iterator[int | None]:
        yield 1
        try:
            while True:
                running.set()
                yield None
        finally:
            ended.set()

    a = turns.submit(endless())
    assert running.wait(5)
    freed = turns.close(lambda: "freed")
    assert freed.result(timeout=5) == "freed" and ended.is_set()
    with pytest.raises(TurnsClosed):
        a.future.result(timeout=5)
    with pytest.raises(RuntimeError):
        turns.submit(steps("b", 1, log))
