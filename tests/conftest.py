"""Shared fixtures: a real grpc.aio server on a real Unix socket (in-process,
for wire tests) and the real sidecar process launched like a game does (e2e).

Test helpers are public API: tests of every area use these.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from sidecar.client import SidecarClient
from sidecar.config import Config, load_config
from sidecar.lifecycle import ListenSpec
from sidecar.server import SidecarServer

TEST_TOKEN = "test-token-not-secret"

# The in-process server may import litellm in the background; never fetch prices.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Hold the summary until no embedded model is being built, and build none while it is
    written. A server a test started warms the model up on a thread of its own, which may
    outlive the test; llama_cpp points fds 1 and 2 at /dev/null while it builds, so a build
    overlapping the summary swallowed it (CI's log had 100% and no summary line). Runs
    before the terminal reporter's own sessionfinish prints; released in unconfigure."""
    from sidecar.llm.llama_settings import LLAMA_INIT_LOCK

    session.config.stash[_SUMMARY_HOLDS_BUILDS] = LLAMA_INIT_LOCK.acquire(timeout=120)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_SUMMARY_HOLDS_BUILDS, False):
        from sidecar.llm.llama_settings import LLAMA_INIT_LOCK

        LLAMA_INIT_LOCK.release()


_SUMMARY_HOLDS_BUILDS = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked local_model need the embedded model's weights; without them
    they are skipped, with the reason in pytest's summary (-rs), unless
    GAME_SIDECAR_REQUIRE_WEIGHTS is set (CI), which makes their absence an error."""
    from sidecar.llm.weights import find_local_model

    status = find_local_model()
    if status.ready:
        return
    if os.environ.get("GAME_SIDECAR_REQUIRE_WEIGHTS") and any(i.get_closest_marker("local_model") for i in items):
        # CI sets it: the real model's tests must run there, never skip.
        raise pytest.UsageError(
            f"GAME_SIDECAR_REQUIRE_WEIGHTS is set, but the embedded model is missing: {status.problem}"
        )
    skip = pytest.mark.skip(reason=f"needs the embedded model, not installed here: {status.problem}")
    for item in items:
        if item.get_closest_marker("local_model"):
            item.add_marker(skip)


def config_from_toml(text: str, tmp_path: Path) -> Config:
    path = tmp_path / "sidecar.toml"
    path.write_text(text)
    return load_config(path, env={})


class RunningServer:
    def __init__(self, server: SidecarServer, client: SidecarClient, listen: ListenSpec) -> None:
        self.server = server
        self.client = client
        self.listen = listen
        self.app = server.app

    @property
    def target(self) -> str:
        return self.listen.grpc_target


ServerFactory = Callable[..., Awaitable[RunningServer]]


@pytest.fixture
async def make_server() -> AsyncIterator[ServerFactory]:
    """`await make_server(config=None, token=TEST_TOKEN)` -> RunningServer on a Unix socket."""
    started: list[RunningServer] = []
    dirs: list[tempfile.TemporaryDirectory[str]] = []

    async def factory(config: Config | None = None, token: str = TEST_TOKEN) -> RunningServer:
        tmp = tempfile.TemporaryDirectory(prefix="sidecar-test-")
        dirs.append(tmp)
        listen = ListenSpec("unix", os.path.join(tmp.name, "s.sock"))
        server = SidecarServer(config or Config(), token)
        await server.start(listen)
        running = RunningServer(server, SidecarClient(listen.grpc_target, token), listen)
        started.append(running)
        return running

    yield factory
    for running in started:
        await running.client.close()
        await running.server.stop("test over")
    for tmp in dirs:
        tmp.cleanup()


@pytest.fixture
async def server(make_server: ServerFactory) -> RunningServer:
    """A server with the default config (embedded model profile, state in memory)."""
    return await make_server()


@pytest.fixture
async def client(server: RunningServer) -> SidecarClient:
    return server.client
