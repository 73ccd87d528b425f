"""A TCP relay in front of a server's socket that counts the bytes each way.

What a server takes in of a request it refuses is otherwise invisible from outside:
the relay forwards client bytes only as fast as the server reads them (its writes
wait on `drain()`), so `to_server` is what the server's socket read, give or take the
kernel's buffers. Tests compare it with the body's size.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["ByteRelay"]


class ByteRelay:
    def __init__(self, unix_path: str) -> None:
        self._unix_path = unix_path
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: Bytes forwarded from clients to the server, and back.
        self.to_server = 0
        self.to_client = 0
        self.target = ""

    async def __aenter__(self) -> ByteRelay:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.target = f"127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        await self._server.wait_closed()

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_unix_connection(self._unix_path)
        up = asyncio.create_task(self._pipe(client_r, server_w, up=True))
        down = asyncio.create_task(self._pipe(server_r, client_w, up=False))
        self._tasks.update((up, down))
        try:
            await asyncio.wait((up, down), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            for writer in (server_w, client_w):
                writer.close()
            self._tasks.difference_update((up, down))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, up: bool) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
            if up:
                self.to_server += len(data)
            else:
                self.to_client += len(data)
