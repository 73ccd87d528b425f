"""Python launcher and async client: what a Python game (and our tests, tools
and demo) uses to start a sidecar and talk to it.

    async with await SidecarProcess.launch() as sidecar:
        client = sidecar.client
        info = await client.get_info()

The launcher spawns `python -m sidecar serve` with stdin/stdout pipes, reads
the handshake with a timeout, and on close shuts the sidecar down the way
docs/protocol.md §1 says: close stdin, wait, then terminate, then kill.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import grpc

from sidecar.lifecycle import EXIT_STATE_DIR_BUSY, MAGIC_ENV, MAGIC_VALUE, TOKEN_ENV
from sidecar.v1 import agent_service_pb2 as agent_pb
from sidecar.v1 import agent_service_pb2_grpc as agent_grpc
from sidecar.v1 import session_service_pb2 as session_pb
from sidecar.v1 import session_service_pb2_grpc as session_grpc
from sidecar.v1 import sidecar_service_pb2 as sidecar_pb
from sidecar.v1 import sidecar_service_pb2_grpc as sidecar_grpc
from sidecar.v1 import state_pb2, types_pb2

__all__ = [
    "LaunchError",
    "ExitedBeforeHandshake",
    "StateDirBusy",
    "MalformedHandshake",
    "HandshakeTimeout",
    "Handshake",
    "SidecarProcess",
    "SidecarClient",
    "error_reason",
    "auth_interceptors",
    "SessionOptionFields",
    "RunFields",
]

STDERR_TAIL_LINES = 40


class LaunchError(Exception):
    """The sidecar could not be started. `stderr_tail` holds its last stderr lines."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(f"{message}\n--- sidecar stderr (tail) ---\n{stderr_tail}" if stderr_tail else message)
        self.stderr_tail = stderr_tail


class ExitedBeforeHandshake(LaunchError):
    """The process ended before writing its handshake line (`returncode` says how)."""

    def __init__(self, returncode: int | None, stderr_tail: str) -> None:
        super().__init__(f"sidecar exited before handshake (exit code {returncode})", stderr_tail)
        self.returncode = returncode


class StateDirBusy(ExitedBeforeHandshake):
    """Another sidecar holds the `--state-dir` lock (exit code 3): one is already
    serving that journal. Stop it, reuse it, or pick another directory."""


class MalformedHandshake(LaunchError):
    """The first stdout line was not a protocol-1 game-sidecar handshake (`line` holds it)."""

    def __init__(self, line: str, why: str, stderr_tail: str) -> None:
        super().__init__(f"malformed handshake ({why}): {line[:200]!r}", stderr_tail)
        self.line = line


class HandshakeTimeout(LaunchError):
    """No handshake within the timeout; the process was stopped."""


@dataclass(frozen=True)
class Handshake:
    transport: str
    address: str
    pid: int
    version: str
    protocol: int
    #: Present only when the sidecar generated the token.
    token: str | None = None

    @property
    def target(self) -> str:
        return f"unix:{self.address}" if self.transport == "unix" else self.address

    @classmethod
    def parse(cls, line: str) -> Handshake:
        """Raises ValueError saying what is wrong."""
        doc = json.loads(line)
        if not isinstance(doc, dict) or doc.get("sidecar") != "game-sidecar":
            raise ValueError('not a game-sidecar handshake (no "sidecar":"game-sidecar")')
        if doc.get("protocol") != 1:
            raise ValueError(f"unsupported protocol {doc.get('protocol')!r} (this client speaks 1)")
        if doc.get("transport") not in ("unix", "tcp") or not isinstance(doc.get("address"), str):
            raise ValueError("transport must be unix or tcp, with an address")
        return cls(doc["transport"], doc["address"], int(doc.get("pid", 0)), str(doc.get("version", "")), 1,
                   doc.get("token"))


def error_reason(error: grpc.aio.AioRpcError | grpc.RpcError) -> str:
    """The stable reason of a sidecar error status, e.g. "STALE_REVISION" ("" if none)."""
    for key, value in error.trailing_metadata() or ():
        if key == "sidecar-reason":
            return str(value)
    return ""


class _Auth:
    """Adds `authorization: Bearer <token>` to every call (plain metadata: call
    credentials are dropped on insecure channels)."""

    def __init__(self, token: str) -> None:
        self._pair = ("authorization", f"Bearer {token}")

    def _details(self, d: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(tuple(d.metadata) if d.metadata else ()), self._pair)
        return grpc.aio.ClientCallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready)


#: What an interceptor hands the call on to (grpc's own types are Any to mypy).
_Continuation = Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]]


# grpc.aio sorts a channel's interceptors by the first interceptor type each one
# is an instance of, so each call shape needs its own object. The bases are Any
# to mypy (grpc ships no type stubs), hence the ignores.
class _AuthUnaryUnary(_Auth, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_unary_unary(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request)


class _AuthUnaryStream(_Auth, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_unary_stream(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request)


class _AuthStreamUnary(_Auth, grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_stream_unary(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request_iterator: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


class _AuthStreamStream(_Auth, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_stream_stream(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request_iterator: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


def auth_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that attach the sidecar token to calls of every shape."""
    return [cls(token) for cls in (_AuthUnaryUnary, _AuthUnaryStream, _AuthStreamUnary, _AuthStreamStream)]


class SessionOptionFields(TypedDict, total=False):
    """`SidecarClient.open_session`'s keyword arguments: the fields of `SessionOptions`
    (docs/protocol.md), typed as the generated message's constructor takes them."""

    alias_mode: session_pb.AliasMode | str
    expose_moment: session_pb.MomentExposure | Mapping[str, object]
    coordinate_fields: Iterable[str]
    exposed_coordinate_fields: Iterable[str]
    budget_tokens: int
    profile: str
    memory_bank: bool


class RunFields(TypedDict, total=False):
    """`SidecarClient.narrate`'s keyword arguments: the `RunRequest` fields a
    narration may set besides the session, the actor and the text."""

    focus_ids: Iterable[str]
    moment: types_pb2.GameMoment | Mapping[str, object]
    min_revision: int
    profile: str
    limits: agent_pb.GenerationLimits | Mapping[str, object]
    run_id: str
    urgent: bool
    budget_tokens: int


class SidecarClient:
    """Async client. Raw stubs are `sidecar`, `sessions` and `agent`; the helpers
    below cover what a game does most."""

    def __init__(self, target: str, token: str | None) -> None:
        interceptors = auth_interceptors(token) if token is not None else []
        self.channel = grpc.aio.insecure_channel(target, interceptors=interceptors)
        self.sidecar = sidecar_grpc.SidecarServiceStub(self.channel)
        self.sessions = session_grpc.SessionServiceStub(self.channel)
        self.agent = agent_grpc.AgentServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    # The stubs' methods are untyped (no stubs for *_grpc.py): each helper names the reply type.
    async def get_info(self, include_stats: bool = False) -> sidecar_pb.GetInfoResponse:
        reply: sidecar_pb.GetInfoResponse = await self.sidecar.GetInfo(
            sidecar_pb.GetInfoRequest(include_stats=include_stats)
        )
        return reply

    async def shutdown(self, reason: str = "") -> None:
        await self.sidecar.Shutdown(sidecar_pb.ShutdownRequest(reason=reason))

    async def open_session(
        self, session_id: str = "", **options: Unpack[SessionOptionFields]
    ) -> session_pb.OpenSessionResponse:
        request = session_pb.OpenSessionRequest(session_id=session_id, options=session_pb.SessionOptions(**options))
        reply: session_pb.OpenSessionResponse = await self.sessions.OpenSession(request)
        return reply

    async def close_session(self, session_id: str) -> session_pb.CloseSessionResponse:
        reply: session_pb.CloseSessionResponse = await self.sessions.CloseSession(
            session_pb.CloseSessionRequest(session_id=session_id)
        )
        return reply

    async def apply_deltas(self, session_id: str, base_revision: int, ops: Sequence[state_pb2.DeltaOp],
                           delta_id: str = "") -> session_pb.ApplyDeltasResponse:
        if not delta_id:
            delta_id = os.urandom(8).hex()
        request = session_pb.ApplyDeltasRequest(session_id=session_id, base_revision=base_revision,
                                                delta_id=delta_id, ops=list(ops))
        reply: session_pb.ApplyDeltasResponse = await self.sessions.ApplyDeltas(request)
        return reply

    async def run(self, request: agent_pb.RunRequest, timeout: float | None = None) -> AsyncIterator[agent_pb.RunEvent]:
        """Stream the run's events; raises grpc.aio.AioRpcError when it fails."""
        call = self.agent.Run(request, timeout=timeout)
        try:
            async for response in call:
                yield response.event
        finally:
            call.cancel()

    async def narrate(
        self, session_id: str, text: str, actor_id: str = "", **fields: Unpack[RunFields]
    ) -> AsyncIterator[str]:
        """Just the text of a narration, as it streams."""
        request = agent_pb.RunRequest(session_id=session_id, actor_id=actor_id,
                                      narrate=agent_pb.NarrateInput(text=text), **fields)
        async for event in self.run(request):
            if event.WhichOneof("kind") == "text":
                yield event.text.text


class SidecarProcess:
    """A sidecar child process, launched the way a game launches it."""

    def __init__(self, proc: asyncio.subprocess.Process, handshake: Handshake, token: str,
                 stderr_task: asyncio.Task[None], tail: collections.deque[str]) -> None:
        self.proc = proc
        self.handshake = handshake
        self.token = token
        self._stderr_task = stderr_task
        self._tail = tail
        self.client = SidecarClient(handshake.target, token)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        return "\n".join(self._tail)

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
    ) -> SidecarProcess:
        """Spawn `command` (default: this Python's `-m sidecar serve`) plus `args`.

        `token`: sent as GAME_SIDECAR_TOKEN; None lets the sidecar generate one.
        Raises ExitedBeforeHandshake (StateDirBusy when another sidecar holds
        `--state-dir`), MalformedHandshake or HandshakeTimeout.
        """
        argv = [*(command or (sys.executable, "-m", "sidecar", "serve")), *args]
        child_env = dict(os.environ if env is None else env)
        child_env.setdefault(MAGIC_ENV, MAGIC_VALUE)
        child_env.pop(TOKEN_ENV, None)
        if token is not None:
            child_env[TOKEN_ENV] = token
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=child_env,
        )
        tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        stderr_task = asyncio.create_task(_drain(proc.stderr, tail, on_stderr))
        assert proc.stdout is not None
        try:
            line_bytes = await asyncio.wait_for(proc.stdout.readline(), timeout)
        except TimeoutError:
            await _stop(proc, 1.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            raise HandshakeTimeout(f"no handshake within {timeout:.1f} s", "\n".join(tail)) from None
        if not line_bytes:
            returncode = await _wait(proc, 2.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            if returncode == EXIT_STATE_DIR_BUSY:
                raise StateDirBusy(returncode, "\n".join(tail))
            raise ExitedBeforeHandshake(returncode, "\n".join(tail))
        line = line_bytes.decode("utf-8", "replace").strip()
        try:
            handshake = Handshake.parse(line)
        except (ValueError, TypeError) as exc:
            await _stop(proc, 1.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            raise MalformedHandshake(line, str(exc), "\n".join(tail)) from None
        effective = token if token is not None else handshake.token
        if effective is None:
            await _stop(proc, 1.0)
            raise MalformedHandshake(line, "no token in handshake although none was given", "\n".join(tail))
        return cls(proc, handshake, effective, stderr_task, tail)

    async def close(self, timeout: float = 3.0) -> int | None:
        """Close stdin (the sidecar exits on EOF), wait, then terminate, then kill."""
        await self.client.close()
        code = await _stop(self.proc, timeout)
        try:
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        except TimeoutError:
            self._stderr_task.cancel()
        return code

    async def __aenter__(self) -> SidecarProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _drain(stream: asyncio.StreamReader | None, tail: collections.deque[str],
                 on_line: Callable[[str], None] | None) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        text = line.decode("utf-8", "replace").rstrip("\n")
        tail.append(text)
        if on_line is not None:
            on_line(text)


async def _wait(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        return None


async def _stop(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    if proc.returncode is not None:
        return proc.returncode
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    code = await _wait(proc, timeout)
    if code is None:
        proc.terminate()
        code = await _wait(proc, timeout)
    if code is None:
        proc.kill()
        code = await proc.wait()
    return code
