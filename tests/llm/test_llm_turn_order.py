"""The order in which generations take turns on the embedded model (sidecar/llm/turns.py),
with generators standing in for generations and a host that records parking: round robin,
admission by parking slots and KV cells, warm-ups only while no generation waits, a
failing park ending only the generation it held, and closing. The real model taking
turns: tests/llm/test_llm_turns.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from sidecar.llm.turns import Turn, Turns, TurnsClosed


class Host:
    def __init__(self, slots: int = 4, cells: int = 1000) -> None:
        self.slots, self.cells = slots, cells
        self.events: list[str] = []
        self.fail_park = False

    def capacity(self) -> tuple[int, int]:
        return self.slots, self.cells

    def park(self, turn: Turn) -> None:
        if self.fail_park:
            raise RuntimeError("no cell")
        turn.parked = turn.slot
        self.events.append(f"park {turn.slot}")

    def unpark(self, turn: Turn) -> None:
        self.events.append(f"unpark {turn.slot}")
        turn.parked = None

    def release(self, turn: Turn) -> None:
        self.events.append(f"release {turn.slot}")


def steps(
    name: str, n: int, log: list[str], need: int = 10, gate: threading.Event | None = None
) -> Iterator[int | None]:
    if gate is not None:
        gate.wait(5)  # the first step (before admission) of the first turn: hold the worker
    yield need
    for i in range(n):
        log.append(f"{name}{i}")
        yield None
    return name


def _results(*turns: Turn) -> list[object]:
    return [t.future.result(timeout=5) for t in turns]


@pytest.fixture
def host() -> Iterator[Host]:
    yield Host()


def test_generations_submitted_together_take_a_step_each_in_turn(host: Host) -> None:
    turns, log, gate = Turns(host), [], threading.Event()
    a = turns.submit(steps("a", 3, log, gate=gate))
    b, c = turns.submit(steps("b", 3, log)), turns.submit(steps("c", 2, log))
    gate.set()
    assert _results(a, b, c) == ["a", "b", "c"]
    assert log == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2"]
    assert turns.most_at_once == 3 and turns.foreground == 0
    assert "park 1" in host.events and "unpark 1" in host.events and host.events[-1].startswith("release")
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

    host.slots = 1  # no parking at all: one at a time
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


def test_a_park_that_fails_ends_only_the_generation_it_held(host: Host) -> None:
    turns, log, gate = Turns(host), [], threading.Event()
    a = turns.submit(steps("a", 3, log, gate=gate))
    b = turns.submit(steps("b", 3, log))
    host.fail_park = True
    gate.set()
    with pytest.raises(RuntimeError, match="no cell"):
        a.future.result(timeout=5)
    assert b.future.result(timeout=5) == "b" and log.count("a0") == 1
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
