"""The Linux half of tests/wine/sidecar_relay.c: starts the real sidecar for a
Windows program under Wine and relays its pipes (the frame format is in the C file).

    python tests/wine/relay_host.py SIDECAR_EXE [--port-file F]

Listens on 127.0.0.1 (a free port, printed as the first stdout line and written to
--port-file), and for each relay that connects: reads its arguments and variables,
starts `SIDECAR_EXE ARGS` (adding `--listen tcp://127.0.0.1:0` when the arguments
name no --listen: the Windows default) with the variables added to its own
environment, sends the sidecar's stdout and stderr back, passes stdin on, and
reports the exit code (128 + N for a signal N). A relay that disconnects first was
killed: its sidecar is killed too. Runs until SIGTERM; kills what it started then.

A connection whose first frame is 's' or 'q' is a test's control call about the
sidecar behind the relay whose Windows pid is WINPID (that relay's 'p' frame):
  's' "WINPID SIGNAL": send it POSIX signal SIGNAL (the C# crash tests' SIGSTOP,
      which Windows cannot send); answer 'x' "0";
  'q' "WINPID": answer 'x' with its Linux pid (what its GetInfo reports, where a
      Windows sidecar would report the pid the launcher holds).
On failure the answer is an 'e' frame saying why and 'x' "-1".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import struct
import sys
from pathlib import Path


async def _frame(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readexactly(5)
    (length,) = struct.unpack(">I", head[1:])
    return head[:1], await reader.readexactly(length)


def _pack(kind: bytes, data: bytes) -> bytes:
    return kind + struct.pack(">I", len(data)) + data


class Host:
    def __init__(self, exe: str) -> None:
        self.exe = exe
        self.children: set[asyncio.subprocess.Process] = set()
        self.by_relay_pid: dict[int, asyncio.subprocess.Process] = {}

    async def control(self, kind: bytes, data: bytes, writer: asyncio.StreamWriter) -> None:
        """A test's 's' (signal) or 'q' (which Linux pid) frame about the sidecar behind one relay."""
        try:
            words = [int(x) for x in data.decode().split()]
            child = self.by_relay_pid[words[0]]
            if kind == b"q":
                answer = child.pid
            else:
                if child.returncode is not None:
                    raise ProcessLookupError(f"the sidecar behind relay {words[0]} has exited")
                os.kill(child.pid, words[1])
                answer = 0
            writer.write(_pack(b"x", str(answer).encode()))
        except (ValueError, IndexError, KeyError, OSError) as exc:
            why = f"relay_host: {kind.decode()} {data.decode()!r}: {exc!r}\n"
            writer.write(_pack(b"e", why.encode()) + _pack(b"x", b"-1"))
        await writer.drain()
        writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        args: list[str] = []
        env = dict(os.environ)
        relay_pid = None
        try:
            while True:
                kind, data = await _frame(reader)
                if kind in (b"s", b"q"):
                    await self.control(kind, data, writer)
                    return
                if kind == b"p":
                    relay_pid = int(data)
                elif kind == b"a":
                    args.append(data.decode())
                elif kind == b"v":
                    key, _, value = data.decode().partition("=")
                    env[key] = value
                elif kind == b"g":
                    break
        except asyncio.IncompleteReadError:
            writer.close()
            return
        if not any(a == "--listen" or a.startswith("--listen=") for a in args):
            args += ["--listen", "tcp://127.0.0.1:0"]
        try:
            child = await asyncio.create_subprocess_exec(
                self.exe, *args, env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            writer.write(_pack(b"e", f"relay_host: cannot start {self.exe}: {exc}\n".encode()) + _pack(b"x", b"1"))
            await writer.drain()
            writer.close()
            return
        self.children.add(child)
        if relay_pid is not None:
            self.by_relay_pid[relay_pid] = child

        async def pump(stream: asyncio.StreamReader | None, kind: bytes) -> None:
            assert stream is not None
            while chunk := await stream.read(65536):
                writer.write(_pack(kind, chunk))
                await writer.drain()

        async def feed() -> None:
            assert child.stdin is not None
            try:
                while True:
                    kind, data = await _frame(reader)
                    if kind == b"i":
                        child.stdin.write(data)
                        await child.stdin.drain()
                    elif kind == b"c":
                        child.stdin.close()
            except (asyncio.IncompleteReadError, ConnectionError):
                # The relay is gone before its sidecar: it was killed, so is the sidecar.
                if child.returncode is None:
                    child.kill()

        feeding = asyncio.create_task(feed())
        with contextlib.suppress(ConnectionError):
            await asyncio.gather(pump(child.stdout, b"o"), pump(child.stderr, b"e"))
        code = await child.wait()
        self.children.discard(child)
        if relay_pid is not None and self.by_relay_pid.get(relay_pid) is child:
            del self.by_relay_pid[relay_pid]
        feeding.cancel()
        with contextlib.suppress(ConnectionError):
            writer.write(_pack(b"x", str(code if code >= 0 else 128 - code).encode()))
            await writer.drain()
            writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("exe")
    parser.add_argument("--port-file")
    opts = parser.parse_args()
    host = Host(opts.exe)
    server = await asyncio.start_server(host.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    if opts.port_file:
        Path(opts.port_file).write_text(f"{port}\n")  # noqa: ASYNC240 - once, before serving
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    for child in list(host.children):
        if child.returncode is None:
            child.kill()
            await child.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
