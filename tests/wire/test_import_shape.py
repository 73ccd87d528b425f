"""ImportSession through a real grpc.aio server (issue 24, item 8): a
checksum-valid save whose payload is not a session's shape is INVALID_ARGUMENT /
INVALID_BLOB, the message and ErrorInfo metadata `field` name the bad field's
path, and the session is unchanged; a real export imports."""

from __future__ import annotations

import zlib

import grpc
import msgspec
from test_session_rpcs import expect_error, state_bytes, upsert

from sidecar.client import SidecarClient
from sidecar.v1 import session_service_pb2 as spb


def _reforged(blob: bytes, world: object) -> bytes:
    env = msgspec.msgpack.decode(blob)
    payload = msgspec.msgpack.decode(env["payload"])
    payload["world"] = world
    env["payload"] = msgspec.msgpack.encode(payload)
    env["crc32"] = zlib.crc32(env["payload"])
    return msgspec.msgpack.encode(env)


async def test_import_refuses_a_save_without_a_world(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob", name="Bob")])
    blob = (await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))).blob
    before = await state_bytes(client, "g")
    world = msgspec.msgpack.decode(msgspec.msgpack.decode(blob)["payload"])["world"]
    world["entities"]["bob"]["name"] = 7
    for bad, field in (({}, "world"), (world, "world.entities['bob'].name")):
        for target, overwrite in (("g", True), ("other", False)):
            call = client.sessions.ImportSession(
                spb.ImportSessionRequest(session_id=target, blob=_reforged(blob, bad), overwrite=overwrite)
            )
            info = await expect_error(call, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BLOB")
            assert info.metadata["field"] == field
    assert await state_bytes(client, "g") == before
    missing = client.sessions.GetState(spb.GetStateRequest(session_id="other"))
    await expect_error(missing, grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND")
    done = await client.sessions.ImportSession(spb.ImportSessionRequest(session_id="other", blob=blob))
    assert done.revision == 1 and await state_bytes(client, "other") == before
