"""`SidecarProcess`: a launched sidecar, watched until it ends, and restarted
if the game asked for that (issue 20; docs/protocol.md §1, "When the sidecar exits").

    sidecar = await SidecarProcess.launch(["--state-dir", d], restart=RestartPolicy())
    sidecar.on_status(lambda s: print(s))
    tracked = await sidecar.client.track("game-1")

After the handshake a watcher task awaits the process and a liveness loop probes
it (sidecar/client/_liveness.py). When it ends, whatever the cause:

1. its channel is marked gone and closed: calls in flight end with SidecarGone,
   new calls fail at once with SidecarGone (also while RESTARTING, until READY:
   the game retries then), but for tracked writes, which are held in order;
2. the socket folder is removed, `on_exit` callbacks get the SidecarExit;
3. requested by the game -> STOPPED; no restart policy -> FAILED; otherwise the
   same command, arguments and environment (so the same --state-dir) are
   launched again after the policy's backoff, the new channel is attached under
   the same `client`, tracked sessions are re-opened, their unacknowledged
   batches resent and their held writes sent (through the supervisor's own stub:
   the game's calls are still refused), then READY and `on_restart(RestartOutcome)`.
   A policy used up -> FAILED, and held writes fail (WriteNotApplied). `exited`
   resolves with the last exit once STOPPED or FAILED.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from sidecar.client._client import SidecarClient
from sidecar.client._connection import Link, SwappableChannel, open_link
from sidecar.client._exits import RestartOutcome, RestartPolicy, SidecarExit, SidecarStatus
from sidecar.client._launch_errors import LaunchError
from sidecar.client._launcher import Child, LaunchSpec, stop_process
from sidecar.client._liveness import Liveness
from sidecar.process_contract import Handshake
from sidecar.v1 import session_service_pb2_grpc as session_grpc

__all__ = ["SidecarProcess"]

log = logging.getLogger("sidecar.supervisor")

#: For a process launched while stop() was already waiting.
STOP_GRACE_S = 1.0


class SidecarProcess:
    """A sidecar child process, launched the way a game launches it, and supervised."""

    def __init__(self, child: Child, launch: LaunchSpec, restart: RestartPolicy | None) -> None:
        self._child = child
        self._launch = launch
        self._policy = restart
        self.client: SidecarClient = SidecarClient(child.handshake.target, child.token)
        loop = asyncio.get_running_loop()
        self.client.connection.link.exit = loop.create_future()
        #: Resolves with the last exit once the status is STOPPED or FAILED.
        self.exited: asyncio.Future[SidecarExit] = loop.create_future()
        self.last_exit: SidecarExit | None = None
        self.last_restart: RestartOutcome | None = None
        self._status = SidecarStatus.READY
        #: The last status `on_status` reported (an exit sets `_status` first: _gone).
        self._announced = SidecarStatus.READY
        self._listeners: dict[str, list[Callable[[Any], None]]] = collections.defaultdict(list)
        self._stopping = asyncio.Event()
        self._liveness = Liveness(lambda: self.client.connection.link.channel)
        self._restarts: collections.deque[float] = collections.deque()
        self._watcher = asyncio.create_task(self._supervise(), name=f"sidecar-watch-{child.pid}")

    @classmethod
    async def launch(
        cls,
        args: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        on_stderr: Callable[[str], None] | None = None,
        restart: RestartPolicy | None = None,
    ) -> SidecarProcess:
        """Spawn `command` (default: this Python's `-m sidecar serve`) plus `args`.

        `token`: sent as GAME_SIDECAR_TOKEN; None lets the sidecar generate one.
        `restart`: relaunch after an exit the game did not ask for (None: never).
        Raises SpawnFailed, ExitedBeforeHandshake (StateDirLocked when another sidecar holds
        `--state-dir`), MalformedHandshake or HandshakeTimeout.
        """
        launch = LaunchSpec(tuple(args), tuple(command) if command else None, env, token, timeout, on_stderr)
        return cls(await launch.spawn(), launch, restart)

    # -- what the game reads --------------------------------------------------
    @property
    def proc(self) -> asyncio.subprocess.Process:
        """The current process (a restart replaces it), as are pid, handshake and token."""
        return self._child.proc

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def handshake(self) -> Handshake:
        return self._child.handshake

    @property
    def token(self) -> str:
        return self._child.token

    @property
    def status(self) -> SidecarStatus:
        return self._status

    def stderr_tail(self) -> str:
        return "\n".join(self._child.tail)

    def on_status(self, callback: Callable[[SidecarStatus], None]) -> None:
        """`callback(status)` on every change (STARTING is never seen: launch returns READY)."""
        self._listeners["status"].append(callback)

    def on_exit(self, callback: Callable[[SidecarExit], None]) -> None:
        """`callback(exit)` for each process that ends (each one a restart replaces, too)."""
        self._listeners["exit"].append(callback)

    def on_restart(self, callback: Callable[[RestartOutcome], None]) -> None:
        """`callback(outcome)` once a restart is READY (sessions resumed or lost, batches resent)."""
        self._listeners["restart"].append(callback)

    async def wait_exit(self) -> SidecarExit:
        return await asyncio.shield(self.exited)

    # -- stopping -------------------------------------------------------------
    async def stop(self, timeout: float = 3.0) -> SidecarExit:
        """Close stdin -> `timeout` -> SIGTERM -> `timeout` -> SIGKILL (a hung process
        is killed at once); then the client is closed. Returns how it ended."""
        self._stopping.set()
        if not self._watcher.done():
            child = self._child
            await stop_process(child.proc, timeout, lambda: self._liveness.unresponsive(child))
            await asyncio.shield(self._watcher)
        await self.client.close()
        return self.exited.result()

    async def close(self, timeout: float = 3.0) -> int | None:
        """`stop()`, returning the exit code (-N when signal N ended it, as asyncio does)."""
        exit = await self.stop(timeout)
        return exit.code if exit.signal is None else -exit.signal

    async def __aenter__(self) -> SidecarProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the watcher ----------------------------------------------------------
    async def _supervise(self) -> None:
        try:
            await self._watch()
        except Exception:  # a bug here must not leave `exited` pending forever
            log.exception("the sidecar watcher failed")
            with contextlib.suppress(ProcessLookupError):
                self._child.proc.kill()
            self._finish(SidecarStatus.FAILED, self.last_exit or SidecarExit(None, None, pid=self.pid))

    async def _watch(self) -> None:
        while True:
            child = self._child
            liveness = asyncio.create_task(self._liveness.watch(child, self._stopping),
                                           name=f"sidecar-liveness-{child.pid}")
            returncode = await child.proc.wait()
            liveness.cancel()
            # The game asked: stop()/close(), or a Shutdown call through this client.
            requested = self._stopping.is_set() or self.client.connection.link.shutdown_requested
            exit = SidecarExit.from_returncode(returncode, await child.drained_tail(), requested=requested,
                                               hung=self._liveness.killed(child), pid=child.pid)
            await self._gone(child, exit)
            if requested:
                return self._finish(SidecarStatus.STOPPED, exit)
            if self._policy is None:
                return self._finish(SidecarStatus.FAILED, exit)
            if not await self._restart(exit, self._policy):
                return None

    async def _gone(self, child: Child, exit: SidecarExit) -> None:
        """Within milliseconds of the exit: every call on its channel ends with SidecarGone."""
        link = self.client.connection.link
        link.will_restart = (self._policy is not None and not exit.requested
                             and self._window(self._policy) < self._policy.max_restarts)
        link.gone = True
        # Before any await: a call that fails with SidecarGone never finds the status READY.
        # on_status hears of it where it always did, after on_exit (_set_status).
        self._status = (SidecarStatus.RESTARTING if link.will_restart
                        else SidecarStatus.STOPPED if exit.requested else SidecarStatus.FAILED)
        if link.exit is not None and not link.exit.done():
            link.exit.set_result(exit)
        await link.channel.close()  # cancels what is in flight; translated by the link
        child.remove_socket()
        self.last_exit = exit
        log.info("sidecar exited", extra={"fields": {"pid": child.pid, "exit": exit.describe()}})
        self._emit("exit", exit)

    async def _restart(self, exit: SidecarExit, policy: RestartPolicy) -> bool:
        """Relaunch until one is READY (True) or the policy is used up (False, FAILED)."""
        while (attempt := self._allow(policy)) is not None:
            self._set_status(SidecarStatus.RESTARTING)
            if await _wait_event(self._stopping, policy.backoff(attempt)):
                self._finish(SidecarStatus.STOPPED, exit)
                return False
            try:
                child = await self._launch.spawn()
            except LaunchError as exc:
                code = getattr(exc, "returncode", None)
                exit = SidecarExit(code, None, tuple(exc.stderr_tail.splitlines()[-20:]))
                self.last_exit = exit
                self._emit("exit", exit)
                continue
            link = open_link(child.handshake.target, child.token)
            link.exit = asyncio.get_running_loop().create_future()
            # The game's calls are refused until READY: tracked writes are held, in order,
            # and sent by the resume below (docs/protocol.md §1, "Tracked writes").
            link.restarting = self.client.connection.link
            self._child = child
            self.client.connection.swap(link)
            if self._stopping.is_set():  # stop() came during the launch: this one too
                await stop_process(child.proc, STOP_GRACE_S)
                return True  # the loop records its (requested) exit
            try:
                outcome = await self._resume(exit, attempt, link)
            except grpc.aio.AioRpcError as exc:
                # The new one ended too (the loop records it), or cannot be trusted: end it.
                log.warning("resuming tracked sessions failed", extra={"fields": {"error": str(exc)}})
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()
                self._open_gates()  # the writes waiting there are held for the next restart
                return True
            link.restarting = None  # with READY, and no await in between: no write slips past
            self.last_restart = outcome
            self._set_status(SidecarStatus.READY)
            self._open_gates()
            self._emit("restart", outcome)
            return True
        self._finish(SidecarStatus.FAILED, exit)
        return False

    def _window(self, policy: RestartPolicy) -> int:
        """How many restarts the policy's window holds now."""
        now = asyncio.get_running_loop().time()
        while self._restarts and now - self._restarts[0] > policy.window_s:
            self._restarts.popleft()
        return len(self._restarts)

    def _allow(self, policy: RestartPolicy) -> int | None:
        """The number of this restart within the window, or None when used up."""
        if self._window(policy) >= policy.max_restarts:
            return None
        self._restarts.append(asyncio.get_running_loop().time())
        return len(self._restarts)

    async def _resume(self, exit: SidecarExit, attempt: int, link: Link) -> RestartOutcome:
        """Re-open every tracked session, resend its unacknowledged batch, send what the
        game wrote meanwhile; until nothing is held (the game may write during this)."""
        sessions = session_grpc.SessionServiceStub(SwappableChannel(lambda: link, admit=True))
        lost: list[str] = []
        resumed: list[str] = []
        resent = []
        for tracked in list(self.client.tracked.values()):
            found, batches = await tracked.resume(sessions)
            (resumed if found else lost).append(tracked.session_id)
            resent.extend(batches)
        for tracked in list(self.client.tracked.values()):  # what the game wrote meanwhile; gates closed
            resent.extend(await tracked.flush(sessions))
        return RestartOutcome(exit, attempt, sessions_lost=bool(lost) or not self._launch.state_dir,
                              lost=tuple(lost), resumed=tuple(resumed), resent=tuple(resent))

    def _open_gates(self) -> None:
        for tracked in self.client.tracked.values():
            tracked.open_gate()

    def _finish(self, status: SidecarStatus, exit: SidecarExit) -> None:
        link = self.client.connection.link
        for gone in (link, link.restarting):  # stopped, or the policy is used up: it stays gone
            if gone is not None:
                gone.will_restart = False
        why = ("the sidecar was stopped" if status is SidecarStatus.STOPPED
               else "no restart policy" if self._policy is None else "the restart policy is used up")
        for tracked in self.client.tracked.values():
            tracked.abandon(exit, why)
        self._open_gates()  # a write waiting there is now refused: no restart follows
        self._set_status(status)
        if not self.exited.done():
            self.exited.set_result(exit)

    # -- notifications --------------------------------------------------------
    def _set_status(self, status: SidecarStatus) -> None:
        self._status = status
        if status is not self._announced:
            self._announced = status
            self._emit("status", status)

    def _emit(self, kind: str, value: object) -> None:
        for callback in list(self._listeners[kind]):
            try:
                callback(value)
            except Exception:  # a game's callback must not stop the watcher
                log.exception("sidecar %s callback failed", kind)


async def _wait_event(event: asyncio.Event, timeout: float) -> bool:
    """True if `event` was set within `timeout` seconds."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True
