"""How sidecar.client._connection.Link reads a failed call once its process may be gone: a
transport failure without the sidecar's reason (UNAVAILABLE, or the INTERNAL "Internal
error from Core" grpc.aio reports when its own stream write races the connection's
close, grpc/grpc#36066) becomes SidecarGone when the exit is known; the sidecar's own
errors (they carry `sidecar-reason`) pass through unchanged."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from sidecar.client import SidecarExit, SidecarGone
from sidecar.client._connection import Link


def _error(code: grpc.StatusCode, reason: str = "", details: str = "") -> grpc.aio.AioRpcError:
    trailing = grpc.aio.Metadata(("sidecar-reason", reason)) if reason else grpc.aio.Metadata()
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, details)


async def _link_whose_process_exited() -> Link:
    link = Link(grpc.aio.insecure_channel("127.0.0.1:9"), "127.0.0.1:9")
    link.exit = asyncio.get_running_loop().create_future()
    link.exit.set_result(SidecarExit(None, 9, pid=4242))
    return link


@pytest.mark.parametrize(("code", "details"), [
    (grpc.StatusCode.UNAVAILABLE, "Socket closed"),
    (grpc.StatusCode.INTERNAL, "Internal error from Core"),
])
async def test_a_transport_failure_after_the_exit_is_sidecar_gone(code: grpc.StatusCode, details: str) -> None:
    link = await _link_whose_process_exited()
    translated = await link.translate(_error(code, details=details))
    assert isinstance(translated, SidecarGone) and translated.exit == link.exit.result()  # type: ignore[union-attr]
    await link.channel.close()


async def test_the_sidecars_own_errors_pass_through() -> None:
    link = await _link_whose_process_exited()
    for code, reason in ((grpc.StatusCode.INTERNAL, "INTERNAL"), (grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE")):
        error = _error(code, reason=reason)
        assert await link.translate(error) is error
    await link.channel.close()
