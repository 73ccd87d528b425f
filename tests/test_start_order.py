"""The sidecar's start (issue 30, item 7): its handshake goes out before the background
loading begins. The loading runs on threads (the embedded model, litellm) that contend for
the interpreter with the start; begun before the handshake they cost it about 110 ms idle
and 140 ms with two cores busy (docs/benchmarks.md, "Start and restart")."""

from __future__ import annotations

import os

from sidecar import cli, host_watch, lifecycle, platforms
from sidecar.config import Config
from sidecar.lifecycle import ListenSpec
from sidecar.process_contract import EXIT_OK
from sidecar.server import SidecarServer


async def test_the_handshake_goes_out_before_the_background_loading(monkeypatch, tmp_path) -> None:
    order: list[str] = []
    started: list[bool] = []

    def handshake(fd, bound, token) -> None:
        order.append("handshake")

    def load(self: SidecarServer) -> None:
        order.append("load")
        self.request_stop("test over")

    async def start(self: SidecarServer, listen: ListenSpec, *, load: bool = True) -> ListenSpec:
        started.append(load)
        return await real_start(self, listen, load=load)

    real_start = SidecarServer.start
    monkeypatch.setattr(lifecycle, "write_handshake", handshake)
    monkeypatch.setattr(host_watch, "watch_host", lambda *args, **kwargs: None)
    monkeypatch.setattr(platforms, "install_stop_signals", lambda *args: [])
    monkeypatch.setattr(SidecarServer, "load", load)
    monkeypatch.setattr(SidecarServer, "start", start)
    listen = ListenSpec("unix", str(tmp_path / "s.sock"))
    code = await cli._serve(Config(), listen, "token", False, 1, os.getpid(), False, [])
    assert code == EXIT_OK
    assert started == [False]  # the server itself did not begin loading
    assert order == ["handshake", "load"]


async def test_a_server_started_in_process_loads_once(tmp_path) -> None:
    server = SidecarServer(Config(), "token")
    calls: list[int] = []
    server.app.gateway.start = lambda: calls.append(1)  # type: ignore[method-assign]
    await server.start(ListenSpec("unix", str(tmp_path / "s.sock")))
    server.load()
    try:
        assert calls == [1]
    finally:
        await server.stop("test over")
