"""What a refused request costs the server (issue 24, item 2): a body without the
token, or over the receive limit, is not taken in; a whole world bigger than one
message comes in pieces. Through a real server on a real socket, with a relay in
front that counts what the server's socket read (tests/fakes/byte_relay.py)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from fakes.byte_relay import ByteRelay
from test_session_rpcs import expect_error, upsert

from sidecar.client import CHUNK_BYTES, SidecarClient, error_reason
from sidecar.config import Config, StateLimits
from sidecar.errors import InvalidRequest
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb

BODY = 16_000_000
#: What a refused body may get through: one HTTP/2 window or two, and the kernel's buffers.
TAKEN_IN = 2_000_000
APPLY = "/sidecar.v1.SessionService/ApplyDeltas"


def _raw(channel: grpc.aio.Channel, method: str) -> Any:
    return channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)


def _world(entities: int, description: int = 16_000) -> pb.Snapshot:
    return pb.Snapshot(entities=[pb.Entity(id=f"e{i}", kind=1, description="z" * description)
                                 for i in range(entities)])


async def test_an_unauthenticated_body_is_not_taken_in(make_server: Any) -> None:
    running = await make_server()
    await running.client.open_session("g")
    async with ByteRelay(running.listen.address) as relay:
        async with grpc.aio.insecure_channel(relay.target) as channel:
            for method in (APPLY, "/sidecar.v1.SessionService/ReplaceState",
                           "/sidecar.v1.AgentService/Run", "/sidecar.v1.SessionService/StreamDeltas"):
                before = relay.to_server
                if method.endswith("Deltas") and "Stream" in method:
                    call = channel.stream_stream(method, request_serializer=lambda b: b,
                                                 response_deserializer=lambda b: b)([bytes(BODY)])
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        async for _ in call:
                            pass
                    err = info.value
                elif method.endswith("Run"):
                    call = channel.unary_stream(method, request_serializer=lambda b: b,
                                                response_deserializer=lambda b: b)(bytes(BODY))
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        async for _ in call:
                            pass
                    err = info.value
                else:
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        await _raw(channel, method)(bytes(BODY))
                    err = info.value
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED and error_reason(err) == "UNAUTHENTICATED"
                # The old deny handler had the unary shape: grpc read all 16 MB first.
                assert relay.to_server - before < TAKEN_IN, (method, relay.to_server - before)
    assert (await running.client.open_session("g")).revision == 0


async def test_a_body_over_the_request_limit_is_refused_before_it_is_buffered(make_server: Any) -> None:
    running = await make_server(Config(state=StateLimits(max_ops_per_batch=100)), token="t")  # limit: 1 MiB
    await running.client.open_session("g")
    body = spb.ApplyDeltasRequest(session_id="g", ops=[upsert(f"e{i}", description="x" * 16_000)
                                                       for i in range(1000)]).SerializeToString()
    assert len(body) > BODY
    async with ByteRelay(running.listen.address) as relay:
        client = SidecarClient(relay.target, "t")
        try:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await _raw(client.channel, APPLY)(body)
            # gRPC itself, from the length prefix (the receive limit is max_request_bytes).
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # With the receive limit at max_snapshot_bytes, all 16 MB were read, then refused.
            assert relay.to_server < TAKEN_IN, relay.to_server
            assert (await client.open_session("g")).revision == 0
        finally:
            await client.close()


async def test_a_world_over_one_message_goes_in_pieces(make_server: Any) -> None:
    limits = StateLimits(max_ops_per_batch=100, max_snapshot_bytes=8_000_000)  # requests: 1 MiB
    running = await make_server(Config(state=limits))
    client = running.client
    await client.open_session("g")
    world = _world(300)  # 4.8 MB
    request = spb.ReplaceStateRequest(session_id="g", snapshot=world)
    assert request.ByteSize() > 4 * CHUNK_BYTES
    # One message that big is over the receive limit...
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.sessions.ReplaceState(request)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in caught.value.details()
    # ...in pieces it is whole.
    assert (await client.replace_state(request)).revision == 1
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert [(e.id, e.description) for e in state.snapshot.entities] == [(e.id, e.description) for e in world.entities]
    blob = (await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))).blob
    assert len(blob) > 4 * CHUNK_BYTES
    imported = await client.import_session("h", blob)
    assert imported.session_id == "h" and imported.revision == 1
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="h"))
    assert [(e.id, e.description) for e in state.snapshot.entities] == [(e.id, e.description) for e in world.entities]


async def test_chunked_worlds_are_refused_like_any_request(make_server: Any) -> None:
    limits = StateLimits(max_ops_per_batch=100, max_snapshot_bytes=3_000_000)
    running = await make_server(Config(state=limits))
    client = running.client
    await client.open_session("g")
    chunked = client.sessions.ReplaceStateChunked

    def pieces(data: bytes, size: int = CHUNK_BYTES, kind: Any = spb.ReplaceStateChunkedRequest) -> list[Any]:
        return [kind(data=data[i : i + size]) for i in range(0, len(data), size)]

    # Over max_snapshot_bytes: refused at the piece that crosses it.
    too_big = spb.ReplaceStateRequest(session_id="g", snapshot=_world(300)).SerializeToString()
    info = await expect_error(chunked(iter(pieces(too_big))), grpc.StatusCode.INVALID_ARGUMENT, "LIMIT_EXCEEDED")
    assert info.metadata["limit"] == "max_snapshot_bytes"
    # No pieces, and pieces that do not make a request.
    await expect_error(chunked(iter([])), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST")
    good = spb.ReplaceStateRequest(session_id="g", snapshot=_world(3)).SerializeToString()
    await expect_error(chunked(iter(pieces(good[:-7], 100))), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST")
    garbage = pieces(b"\xff" * 5000, kind=spb.ImportSessionChunkedRequest)
    await expect_error(client.sessions.ImportSessionChunked(iter(garbage)),
                       grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST")
    # What the pieces ask is checked like the unary call's request.
    await expect_error(chunked(iter(pieces(spb.ReplaceStateRequest(session_id="nope").SerializeToString()))),
                       grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND")
    await expect_error(client.sessions.ImportSessionChunked(iter(pieces(
        spb.ImportSessionRequest(session_id="g", blob=b"garbage" * 1000).SerializeToString(),
        kind=spb.ImportSessionChunkedRequest))),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BLOB")
    # Without the token: refused before a piece is read.
    anonymous = SidecarClient(running.target, None)
    try:
        await expect_error(anonymous.sessions.ReplaceStateChunked(iter(pieces(good))),
                           grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
    finally:
        await anonymous.close()
    assert (await client.sessions.GetState(spb.GetStateRequest(session_id="g"))).revision == 0
    # The good one, in small pieces.
    assert (await chunked(iter(pieces(good, 100)))).revision == 1


def test_the_request_limit_leaves_room_for_a_piece() -> None:
    with pytest.raises(InvalidRequest, match="max_request_bytes"):
        StateLimits(max_request_bytes=CHUNK_BYTES)
    assert StateLimits(max_request_bytes=2 * CHUNK_BYTES).request_bytes() == 2 * CHUNK_BYTES
