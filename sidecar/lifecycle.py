"""The server's side of the process contract (docs/protocol.md §1): the token,
the listen address and socket directory, stdout kept for the one-line handshake,
and the watchdogs that make the sidecar die with its host. The contract's names
(environment, exit codes, the handshake's text) are sidecar/process_contract.py's.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from sidecar import __version__, platforms
from sidecar.platforms import SOCKET_NAME, Platform
from sidecar.process_contract import PROTOCOL_VERSION, TOKEN_ENV, Handshake

__all__ = [
    "ListenSpec",
    "default_transport",
    "parse_listen",
    "resolve_token",
    "protect_stdout",
    "write_handshake",
]

log = logging.getLogger("sidecar.lifecycle")


@dataclass
class ListenSpec:
    transport: str  # "unix" or "tcp"
    #: unix: socket path; tcp: host (port in `port`).
    address: str
    port: int = 0
    #: The fresh 0700 directory holding the socket, removed on exit (unix default only).
    owned_dir: Path | None = None

    @property
    def grpc_target(self) -> str:
        return f"unix:{self.address}" if self.transport == "unix" else f"{self._host()}:{self.port}"

    def _host(self) -> str:
        return f"[{self.address}]" if ":" in self.address else self.address

    def handshake_address(self) -> str:
        """unix: the socket path; tcp: host:port as bound."""
        return self.address if self.transport == "unix" else f"{self._host()}:{self.port}"

    def cleanup(self) -> None:
        if self.transport == "unix":
            try:
                os.unlink(self.address)
            except FileNotFoundError:
                pass
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)


_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def default_transport(platform: Platform | None = None) -> str:
    """ "unix" where this Python can make Unix sockets, else "tcp" (loopback).

    CPython on Windows has no socket.AF_UNIX (even where Windows itself has it), so
    a frozen build for Windows listens on 127.0.0.1 with a random port: the token
    then guards the port against other local users (docs/shipping.md, "Windows").
    """
    return (platform or platforms.current()).default_transport


def parse_listen(value: str | None, platform: Platform | None = None) -> ListenSpec:
    """`None`: the platform's default (default_transport()); "unix": a socket in a
    fresh 0700 temp dir; "unix:PATH"; "tcp://HOST:PORT".

    Raises ValueError with a message for the command line.
    """
    platform = platform or platforms.current()
    if value in (None, "") and platform.default_transport == "tcp":
        return ListenSpec("tcp", "127.0.0.1", 0)
    if value in (None, "", "unix"):
        if platform.default_transport != "unix":
            raise ValueError("--listen unix: this platform has no Unix sockets; use tcp://127.0.0.1:0")
        directory = platforms.socket_dir(platform)
        return ListenSpec("unix", str(directory / SOCKET_NAME), owned_dir=directory)
    if value.startswith("unix:"):
        path = value.removeprefix("unix:").removeprefix("//")
        if not path:
            raise ValueError("--listen unix:PATH needs a path")
        return ListenSpec("unix", path)
    if value.startswith("tcp://"):
        hostport = value.removeprefix("tcp://")
        host, sep, port_text = hostport.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise ValueError(f"--listen {value!r}: expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:0")
        return ListenSpec("tcp", host, int(port_text))
    raise ValueError(f"--listen {value!r}: expected unix, unix:PATH or tcp://HOST:PORT")


def is_loopback(spec: ListenSpec) -> bool:
    return spec.transport == "unix" or spec.address in _LOOPBACK or spec.address.startswith("127.")


def resolve_token(env: dict[str, str]) -> tuple[str, bool]:
    """(token, generated). A game-chosen token is never echoed in the handshake."""
    token = env.get(TOKEN_ENV, "")
    if token:
        return token, False
    return secrets.token_urlsafe(32), True


def protect_stdout() -> int:
    """Keep stdout for the handshake alone.

    Returns a private duplicate of the real stdout, then points fd 1 (and
    sys.stdout) at stderr, so a stray print or a native library writing to
    stdout can never corrupt the game's handshake pipe.
    """
    sys.stdout.flush()
    private_fd = os.dup(1)
    os.set_inheritable(private_fd, False)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return private_fd


def write_handshake(fd: int, spec: ListenSpec, token: str | None) -> None:
    """The first and only line on stdout; the pipe is closed after it."""
    handshake = Handshake(spec.transport, spec.handshake_address(), os.getpid(), __version__, PROTOCOL_VERSION, token)
    line = handshake.line().encode()
    with os.fdopen(fd, "wb", buffering=0) as out:
        out.write(line)
