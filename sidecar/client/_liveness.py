"""Is the sidecar still answering? (issue 20: a hung sidecar counts as gone.)

Next to the channel's keepalive pings (sidecar/client/_connection.py), a cheap call: a
grpc.health Check with a 1 s deadline, started each second. No answer for 3 s
(and at least two failed checks, so one stall of the game's own event loop is
not taken for a hung sidecar): the process is declared hung and killed with
SIGKILL, and the supervisor handles that like any exit (`SidecarExit.hung`).
A SIGSTOPped or deadlocked sidecar is so declared about 3 to 4 s after it
stopped answering (scripts/bench/bench_crash_recovery.py measures it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sidecar.client._launcher import Child

__all__ = ["Liveness"]

log = logging.getLogger("sidecar.liveness")

PERIOD_S = 1.0
PROBE_TIMEOUT_S = 1.0
HUNG_AFTER_S = 3.0
HUNG_MISSES = 2


class Liveness:
    def __init__(self, channel: Callable[[], grpc.aio.Channel]) -> None:
        self._channel = channel
        self._misses = 0
        self._killed_pid = 0

    def killed(self, child: Child) -> bool:
        """This process was declared hung and killed here."""
        return child.pid == self._killed_pid

    async def watch(self, child: Child, stopping: asyncio.Event) -> None:
        """Probe until the process is declared hung (then kill it) or a stop begins."""
        loop = asyncio.get_running_loop()
        last_answer = next_probe = loop.time()
        self._misses = 0
        while True:
            # Probes start a period apart, however long the last one took to fail.
            next_probe += PERIOD_S
            await asyncio.sleep(max(0.0, next_probe - loop.time()))
            if stopping.is_set():
                return  # stop() asks `unresponsive` from here
            if await self.probe() is None:
                last_answer, self._misses = loop.time(), 0
                continue
            self._misses += 1
            if self._misses >= HUNG_MISSES and loop.time() - last_answer >= HUNG_AFTER_S:
                log.warning("sidecar not answering: killing it", extra={"fields": {"pid": child.pid}})
                self._kill(child)
                return

    async def probe(self) -> grpc.StatusCode | None:
        """None when the sidecar answered a health check in time, else the failure's code."""
        stub = health_pb2_grpc.HealthStub(self._channel())
        try:
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=PROBE_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            code: grpc.StatusCode = exc.code()
            return code
        return None

    async def unresponsive(self, child: Child) -> bool:
        """For a stop: True (and the process marked as killed hung) when it has been
        failing checks, or gives no answer within the deadline now. A sidecar in its
        orderly exit refuses at once instead, and is left to finish."""
        if self._misses >= HUNG_MISSES or await self.probe() == grpc.StatusCode.DEADLINE_EXCEEDED:
            if child.proc.returncode is None:
                self._killed_pid = child.pid
                return True
        return False

    def _kill(self, child: Child) -> None:
        self._killed_pid = child.pid
        try:
            child.proc.kill()
        except ProcessLookupError:
            pass
