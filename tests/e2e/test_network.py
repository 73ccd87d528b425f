"""The sidecar connects to nothing but the configured provider (and the game's socket):
no price-map fetch, no tokenizer download, no telemetry. Checked on every connect()
the process and its threads make, traced by strace, venv and frozen alike, through
start-up, GetInfo, a scripted run and a provider run."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from launchers import SidecarCommand

from sidecar.v1 import agent_service_pb2 as agent

pytestmark = pytest.mark.timeout(180)
STRACE = shutil.which("strace")

CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_\w+)(.*?)\}, \d+\)")
INET = re.compile(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')
UNIX = re.compile(r'sun_path=(?:@)?"([^"]*)"')


def connects(trace: str) -> list[tuple[str, str]]:
    """[(family, "host:port" or path)] of every connect() in an strace log."""
    found = []
    for family, rest in CONNECT.findall(trace):
        if family in ("AF_INET", "AF_INET6"):
            m = INET.search(rest)
            found.append((family, f"{m.group(2) or m.group(3)}:{m.group(1)}" if m else rest))
        elif family == "AF_UNIX":
            m = UNIX.search(rest)
            found.append((family, m.group(1) if m else rest))
        else:
            found.append((family, rest))
    return found


def test_connects_parses_what_strace_prints() -> None:
    trace = textwrap.dedent(
        """\
        12 connect(7, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.2.3.4")}, 16) = 0
        13 connect(8, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT
        14 connect(9, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", \
&sin6_addr), sin6_scope_id=0}, 28) = 0
        """
    )
    assert connects(trace) == [("AF_INET", "1.2.3.4:443"), ("AF_UNIX", "/var/run/nscd/socket"),
                               ("AF_INET6", "::1:80")]


@pytest.mark.skipif(STRACE is None, reason="strace is not installed (scripts/bootstrap --cpp installs it)")
async def test_only_the_provider_and_the_game_socket_are_connected_to(sidecar_cmd: SidecarCommand,
                                                                        tmp_path: Path) -> None:
    assert STRACE is not None
    log = tmp_path / "connects.strace"
    traced = [STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-e", "signal=none", "-o", str(log)]
    async with FakeOpenAI(chunks=3) as provider:
        config = tmp_path / "sidecar.toml"
        config.write_text(textwrap.dedent(
            f"""
            default_profile = "cloud"
            [profiles.cloud]
            model = "openai/ok"
            api_base = "{provider.base_url}"
            api_key_env = "FAKE_OPENAI_KEY"
            max_retries = 0
            [profiles.fake]
            model = "scripted/test"
            """
        ))
        env = dict(sidecar_cmd.env, FAKE_OPENAI_KEY="sk-fake")
        sidecar = await sidecar_cmd.launch(["--config", str(config)], env=env, command=[*traced, *sidecar_cmd.serve],
                                           timeout=60.0)
        async with sidecar:
            client = sidecar.client
            await client.get_info()
            await client.open_session("s")
            for profile in ("fake", "cloud"):
                request = agent.RunRequest(session_id="s", profile=profile, narrate=agent.NarrateInput(text="Go."))
                kinds = [e.WhichOneof("kind") async for e in client.run(request, timeout=120)]
                assert kinds[-1] == "finished"
            game_socket = sidecar.handshake.address
        provider_at = provider.base_url.removeprefix("http://").split("/", 1)[0]
    seen = connects(log.read_text())
    assert ("AF_INET", provider_at) in seen, f"the trace missed the provider call: {seen}"
    allowed = {("AF_INET", provider_at), ("AF_UNIX", game_socket)}
    unexpected = [c for c in seen if c not in allowed and c[0] != "AF_UNSPEC"]
    assert not unexpected, f"connections other than the provider ({provider_at}) and the game's socket: {unexpected}"
