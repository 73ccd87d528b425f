"""The client's channel to one sidecar process, swappable under the stubs.

`SidecarClient`'s raw stubs (`sidecar`, `sessions`, `agent`) are built once on a
`SwappableChannel`: each call goes to the channel of the client's current `Link`.
A restart attaches a new Link (new socket, new token) and the same stubs, held
anywhere in the game, keep working.

This is also the one place that turns gRPC's view of a dead sidecar into
`SidecarGone`: a call made while the link is gone raises it at once, and a call
that fails after (or because) the process exited raises it instead of
UNAVAILABLE or a bare cancellation (the link's channel is closed when the exit
is seen, which cancels every call on it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

import grpc

from sidecar.client._exits import SidecarExit, SidecarGone
from sidecar.client._metadata import auth_interceptors
from sidecar.process_contract import REASON_KEY

__all__ = ["KEEPALIVE_OPTIONS", "REPLY_BYTES", "Connection", "Link", "SwappableChannel", "endpoint_of", "open_link"]

#: Keepalive pings every second (also when idle) and one second to answer: a dead
#: transport is noticed by gRPC itself. sidecar/server.py permits this rate.
KEEPALIVE_OPTIONS: list[tuple[str, int]] = [
    ("grpc.keepalive_time_ms", 1000),
    ("grpc.keepalive_timeout_ms", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
#: How long a call that failed UNAVAILABLE waits to learn whether the process is
#: gone (a hung one is declared so within this bound by the liveness check).
GONE_WAIT_S = 5.0
#: What a broken transport looks like without the sidecar's reason: UNAVAILABLE, or
#: INTERNAL "Internal error from Core" when grpc.aio's own write on a stream loses
#: the race with the connection closing (grpc/grpc#36066, open upstream). Either is
#: SidecarGone once the process is known to have exited; the sidecar's own errors
#: always carry a `sidecar-reason`.
_TRANSPORT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL})


#: The largest reply accepted (sidecar.server.MAX_SEND_BYTES).
REPLY_BYTES = 64 * 1024 * 1024


def endpoint_of(target: str) -> str:
    """The address a message names: the socket path, or host:port."""
    return target.removeprefix("unix:")


class Link:
    """One channel to one sidecar process, and whether that process is gone."""

    def __init__(self, channel: grpc.aio.Channel, endpoint: str) -> None:
        self.channel = channel
        self.endpoint = endpoint
        #: Resolves when this link's process exits (None: the client is not supervised).
        self.exit: asyncio.Future[SidecarExit] | None = None
        #: Set when the process is gone; calls fail at once from then on.
        self.gone = False
        #: The game called Shutdown through this link: the exit that follows was asked for.
        self.shutdown_requested = False
        #: Set with `gone` by the supervisor: a restart policy will relaunch the process.
        self.will_restart = False
        #: A restarted process's link while its tracked sessions resume: the link of the
        #: process that died. The game's calls fail with its SidecarGone until READY
        #: (None then); only the supervisor's own stubs (`admit=True`) call through.
        self.restarting: Link | None = None
        self._callables: dict[tuple[str, str], Any] = {}

    def refusing(self) -> Link | None:
        """The link whose SidecarGone a game's call gets now, or None when calls go through."""
        return self if self.gone else self.restarting

    def gone_error(self, detail: str = "") -> SidecarGone:
        exit = self.exit.result() if self.exit is not None and self.exit.done() else None
        return SidecarGone(self.endpoint, exit, detail, will_restart=self.will_restart)

    def multicallable(self, kind: str, method: str, kwargs: dict[str, Any]) -> Any:
        key = (kind, method)
        if key not in self._callables:
            self._callables[key] = getattr(self.channel, kind)(method, **kwargs)
        return self._callables[key]

    async def translate(self, exc: BaseException) -> BaseException:
        """The exception a failed call raises: SidecarGone when its process is gone."""
        original = exc  # stays BaseException to mypy (grpc's types are Any)
        if isinstance(exc, asyncio.CancelledError):
            task = asyncio.current_task()
            # Cancelled by the channel closing on exit, not by the game cancelling the task.
            if self.gone and task is not None and task.cancelling() == 0:
                return self.gone_error()
            return exc
        if isinstance(exc, SidecarGone):
            return original
        if self.gone:
            return self.gone_error()
        if not isinstance(exc, grpc.aio.AioRpcError):
            return original
        reason = dict(exc.trailing_metadata() or ()).get(REASON_KEY)
        if exc.code() in _TRANSPORT_CODES and not reason and self.exit is not None:
            # The transport broke: the exit is usually seen within milliseconds (or,
            # for a hung process, once the liveness check kills it).
            try:
                await asyncio.wait_for(asyncio.shield(self.exit), GONE_WAIT_S)
            except TimeoutError:
                return original
            return self.gone_error()
        return original


class GuardedCall:
    """A gRPC call object whose failures are translated by its link."""

    def __init__(self, call: Any, link: Link) -> None:
        self._call = call
        self._link = link

    async def _guard(self, awaitable: Awaitable[Any]) -> Any:
        try:
            return await awaitable
        # InvalidStateError: a write on a stream that ended ("RPC already finished").
        except (grpc.aio.AioRpcError, asyncio.CancelledError, asyncio.InvalidStateError) as exc:
            replacement = await self._link.translate(exc)
            if replacement is exc:
                raise
            raise replacement from exc

    def __await__(self) -> Generator[Any, None, Any]:
        return self._guard(self._call).__await__()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        iterator = self._call.__aiter__()
        while True:
            try:
                item = await self._guard(iterator.__anext__())
            except StopAsyncIteration:
                return
            yield item

    async def read(self) -> Any:
        return await self._guard(self._call.read())

    async def write(self, request: Any) -> None:
        await self._guard(self._call.write(request))

    async def done_writing(self) -> None:
        await self._guard(self._call.done_writing())

    def __getattr__(self, name: str) -> Any:  # cancel(), code(), trailing_metadata(), ...
        return getattr(self._call, name)


class _GuardedMultiCallable:
    def __init__(self, current: Callable[[], Link], kind: str, method: str, kwargs: dict[str, Any],
                 admit: bool) -> None:
        self._current = current
        self._kind = kind
        self._method = method
        self._kwargs = kwargs
        self._admit = admit

    def __call__(self, *args: Any, **kwargs: Any) -> GuardedCall:
        link = self._current()
        if link.gone:
            raise link.gone_error("no call is made while it is gone")
        if link.restarting is not None and not self._admit:
            raise link.restarting.gone_error("no call is made while it restarts: wait for READY")
        return GuardedCall(link.multicallable(self._kind, self._method, self._kwargs)(*args, **kwargs), link)


class SwappableChannel:
    """What the generated stubs are built on: each call goes to `current()`'s channel.
    `admit`: calls go through while the link's sessions resume (the supervisor's stubs)."""

    def __init__(self, current: Callable[[], Link], admit: bool = False) -> None:
        self._current = current
        self._admit = admit

    def unary_unary(self, method: str, **kwargs: Any) -> _GuardedMultiCallable:
        return _GuardedMultiCallable(self._current, "unary_unary", method, kwargs, self._admit)

    def unary_stream(self, method: str, **kwargs: Any) -> _GuardedMultiCallable:
        return _GuardedMultiCallable(self._current, "unary_stream", method, kwargs, self._admit)

    def stream_unary(self, method: str, **kwargs: Any) -> _GuardedMultiCallable:
        return _GuardedMultiCallable(self._current, "stream_unary", method, kwargs, self._admit)

    def stream_stream(self, method: str, **kwargs: Any) -> _GuardedMultiCallable:
        return _GuardedMultiCallable(self._current, "stream_stream", method, kwargs, self._admit)


def open_link(target: str, token: str | None) -> Link:
    """A new channel to the process at `target`, the token on every call."""
    interceptors = auth_interceptors(token) if token is not None else []
    # Replies carry whole worlds (GetState, ExportSession): up to the server's send
    # limit, 64 MiB, not gRPC's default 4 MiB.
    options = [*KEEPALIVE_OPTIONS, ("grpc.max_receive_message_length", REPLY_BYTES)]
    channel = grpc.aio.insecure_channel(target, interceptors=interceptors, options=options)
    return Link(channel, endpoint_of(target))


class Connection:
    """A client's current link to its sidecar process: the one seam through which a
    supervisor swaps the process under the client, as the C# client's SidecarProcess
    swaps its SidecarConnection. The stubs read `link` at every call."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def swap(self, link: Link) -> Link:
        """Make `link` current; returns the one it replaces."""
        previous, self.link = self.link, link
        return previous
