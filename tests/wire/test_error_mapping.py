"""One error mapping for every method of every service the sidecar serves
(docs/protocol.md §2, §4): unparseable bodies get INVALID_ARGUMENT /
INVALID_REQUEST, calls without the token get UNAUTHENTICATED before their body
is looked at, and an unexpected failure anywhere is INTERNAL with the reason
INTERNAL and none of the exception's text. Unary and streaming alike, on a real
server over a real Unix socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from world import World

from sidecar.client import error_reason
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.servicers.agent_service import AgentServicer
from sidecar.servicers.session_service import SessionServicer
from sidecar.servicers.sidecar_service import SidecarServicer
from sidecar.v1 import agent_service_pb2, session_service_pb2, sidecar_service_pb2
from sidecar.v1 import agent_service_pb2 as apb

GARBAGE = b"\xff\xff\xff"  # an unfinished varint tag: no message type parses it
SECRET = "/home/player/secret-path OverflowError"

_OURS = [
    (sidecar_service_pb2, "SidecarService", SidecarServicer),
    (session_service_pb2, "SessionService", SessionServicer),
    (agent_service_pb2, "AgentService", AgentServicer),
]
_THEIRS = [
    (health_pb2, "Health"),
    (reflection_pb2, "ServerReflection"),
]


def _methods(module: Any, service: str) -> list[tuple[str, bool, bool]]:
    desc = module.DESCRIPTOR.services_by_name[service]
    return [(f"/{desc.full_name}/{m.name}", m.client_streaming, m.server_streaming) for m in desc.methods]


OUR_METHODS = [m for module, name, _ in _OURS for m in _methods(module, name)]
ALL_METHODS = OUR_METHODS + [m for module, name in _THEIRS for m in _methods(module, name)]


def _ident(b: bytes) -> bytes:
    return b


async def _call(channel: grpc.aio.Channel, method: tuple[str, bool, bool], body: bytes,
                metadata: tuple[tuple[str, str], ...]) -> list[bytes]:
    """Send one raw body on any call shape; the responses, or AioRpcError."""
    path, client_streaming, server_streaming = method
    kw = {"request_serializer": _ident, "response_deserializer": _ident}
    if client_streaming and server_streaming:
        call = channel.stream_stream(path, **kw)(iter([body]), metadata=metadata)
        return [r async for r in call]
    if client_streaming:
        return [await channel.stream_unary(path, **kw)(iter([body]), metadata=metadata)]
    if server_streaming:
        return [r async for r in channel.unary_stream(path, **kw)(body, metadata=metadata)]
    return [await channel.unary_unary(path, **kw)(body, metadata=metadata)]


TOKEN = "mapping-test-token"
AUTH = (("authorization", f"Bearer {TOKEN}"),)


@pytest.fixture
async def raw(make_server: Any) -> AsyncIterator[grpc.aio.Channel]:
    """A server, and a channel to it with no client interceptors: each call
    carries only the metadata given."""
    running = await make_server(token=TOKEN)
    async with grpc.aio.insecure_channel(running.target) as channel:
        yield channel


@pytest.mark.parametrize("method", ALL_METHODS, ids=[m[0] for m in ALL_METHODS])
async def test_unparseable_body_is_invalid_request(raw: grpc.aio.Channel, method: tuple[str, bool, bool]) -> None:
    if method[0] == "/sidecar.v1.SessionService/StreamDeltas":
        # Answers in-stream and goes on (tests/wire/test_session_fuzz.py pins that).
        got = await _call(raw, method, GARBAGE, AUTH)
        assert session_service_pb2.StreamDeltasResponse.FromString(got[0]).error.reason == "INVALID_REQUEST"
        return
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _call(raw, method, GARBAGE, AUTH)
    err = info.value
    assert (err.code(), error_reason(err)) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"), err.details()
    assert "Traceback" not in (err.details() or "") and "Exception" not in (err.details() or "")


NEEDS_TOKEN = [m for m in ALL_METHODS if m[0] != "/grpc.health.v1.Health/Check"]


def _call_blocking(target: str, method: tuple[str, bool, bool], body: bytes,
                   metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    """`_call` on the blocking client; the status the call ended with."""
    path, client_streaming, server_streaming = method
    kw = {"request_serializer": _ident, "response_deserializer": _ident}
    with grpc.insecure_channel(target) as channel:
        try:
            if client_streaming and server_streaming:
                list(channel.stream_stream(path, **kw)(iter([body]), metadata=metadata))
            elif client_streaming:
                channel.stream_unary(path, **kw)(iter([body]), metadata=metadata)
            elif server_streaming:
                list(channel.unary_stream(path, **kw)(body, metadata=metadata))
            else:
                channel.unary_unary(path, **kw)(body, metadata=metadata)
        except grpc.RpcError as exc:
            assert error_reason(exc) == "UNAUTHENTICATED", exc.details()
            return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize("method", NEEDS_TOKEN, ids=[m[0] for m in NEEDS_TOKEN])
async def test_garbage_without_token_is_unauthenticated(make_server: Any, method: tuple[str, bool, bool]) -> None:
    # The blocking client: grpc.aio's own client may report a server's early status on a
    # streaming call as INTERNAL "Internal error from Core" when its write of the request
    # loses the race with that status (grpc/grpc#36066, open); the server's answer is the
    # same, and the blocking client reports it.
    running = await make_server(token=TOKEN)
    for metadata in ((), (("authorization", "Bearer wrong"),)):
        code = await asyncio.to_thread(_call_blocking, running.target, method, GARBAGE, metadata)
        assert code == grpc.StatusCode.UNAUTHENTICATED


def _valid_body(path: str) -> bytes:
    """A request that parses, so the call reaches the (broken) servicer."""
    if path.endswith("/Run"):
        return apb.RunRequest(session_id="s", narrate=apb.NarrateInput(text="hi")).SerializeToString()
    return b""


def _broken(server_streaming: bool, client_streaming: bool) -> Any:
    """A method body that fails the way a bug does, with text that must not leak."""
    if server_streaming:

        async def broken_stream(self: Any, request: Any, context: Any) -> AsyncIterator[Any]:
            if client_streaming:
                async for _ in request:
                    break
            raise OverflowError(SECRET)
            yield  # pragma: no cover

        return broken_stream

    async def broken(self: Any, request: Any, context: Any) -> Any:
        raise OverflowError(SECRET)

    return broken


@pytest.mark.parametrize("method", OUR_METHODS, ids=[m[0] for m in OUR_METHODS])
async def test_unexpected_failure_is_internal_without_its_text(
    make_server: Any, monkeypatch: pytest.MonkeyPatch, method: tuple[str, bool, bool]
) -> None:
    path, client_streaming, server_streaming = method
    service, name = path.rsplit("/", 1)
    servicer = next(cls for module, svc, cls in _OURS if service.endswith("." + svc))
    monkeypatch.setattr(servicer, name, _broken(server_streaming, client_streaming))
    running = await make_server(token=TOKEN)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _call(running.client.channel, method, _valid_body(path), AUTH)
    err = info.value
    assert (err.code(), error_reason(err)) == (grpc.StatusCode.INTERNAL, "INTERNAL"), err.details()
    assert "secret" not in (err.details() or "") and "Overflow" not in (err.details() or "")


async def test_run_failing_after_text_ends_internal_with_its_reason(
    make_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while streaming (here: converting the second event) ends the Run
    with INTERNAL / INTERNAL; what was streamed before stays delivered."""
    from sidecar.servicers import agent_service

    real = agent_service.event_to_proto

    def fails_after_first(run_id: str, seq: int, value: Any) -> apb.RunResponse:
        if seq > 1:
            raise OverflowError(SECRET)
        return real(run_id, seq, value)

    monkeypatch.setattr(agent_service, "event_to_proto", fails_after_first)
    profile = ModelProfile(model="scripted/wire", max_retries=0, script=ScriptConfig(chunk_delay_ms=1))
    server = await make_server(Config(profiles={"fake": profile}, default_profile="fake"))
    client = server.client
    await client.open_session("s")
    await World().entity("hero", "character", "Hero").send(client, "s", 0)
    got = []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for event in client.run(apb.RunRequest(session_id="s", narrate=apb.NarrateInput(text="Go."))):
            got.append(event)
    assert len(got) == 1 and got[0].HasField("started"), (got, info.value)
    assert (info.value.code(), error_reason(info.value)) == (grpc.StatusCode.INTERNAL, "INTERNAL")
    assert "secret" not in (info.value.details() or "")


def test_the_error_tree_the_proto_and_protocol_md_agree() -> None:
    """sidecar/errors.py's docstring tree, ErrorReason in errors.proto and the
    table in docs/protocol.md §4 name the same reasons with the same codes."""
    import re
    from pathlib import Path

    import sidecar.errors
    from sidecar.v1 import errors_pb2

    tree: dict[str, set[str]] = {}
    for line in (sidecar.errors.__doc__ or "").splitlines():
        m = re.match(r"^\s*[│├└─ ]*(\w+)\s+([A-Z_]+)\s+([A-Z_]+)\s*$", line)
        if m:
            tree.setdefault(m.group(3), set()).add(m.group(2))
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    section = doc.split("## 4. Errors", 1)[1].split("\n## ", 1)[0]
    table = {m.group(1): {c.strip() for c in m.group(2).split("/")}
             for m in re.finditer(r"^\| `([A-Z_]+)` \| ([A-Z_ /]+) \|", section, re.M)}
    proto = {n.removeprefix("ERROR_REASON_") for n in errors_pb2.ErrorReason.keys()} - {"UNSPECIFIED"}
    assert set(tree) == set(table) == proto
    for reason, codes in tree.items():
        assert codes <= table[reason], (reason, codes, table[reason])
