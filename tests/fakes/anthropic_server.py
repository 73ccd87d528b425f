"""A fake Anthropic Messages API (aiohttp) for litellm's "anthropic/..." route:
records each raw request body and streams a reply as Anthropic's SSE events do,
reporting `cache_read_input_tokens` in its usage so cached-token accounting can
be checked end to end."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["FakeAnthropic"]


class FakeAnthropic:
    def __init__(self, *, reply: str = "The lamp gutters.", input_tokens: int = 40, cache_read: int = 1200) -> None:
        self.reply = reply
        self.input_tokens = input_tokens
        self.cache_read = cache_read
        #: The raw HTTP body of each request, as it arrived.
        self.bodies: list[bytes] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(b) for b in self.bodies]

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.read())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(kind: str, data: dict[str, Any]) -> None:
            await response.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

        usage = {
            "input_tokens": self.input_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": self.cache_read,
            "cache_creation_input_tokens": 0,
        }
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        await send("message_start", {"message": message})
        await send("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        for word in self.reply.split(" "):
            delta = {"type": "text_delta", "text": word + " "}
            await send("content_block_delta", {"index": 0, "delta": delta})
        await send("content_block_stop", {"index": 0})
        done = {"stop_reason": "end_turn", "stop_sequence": None}
        await send("message_delta", {"delta": done, "usage": {"output_tokens": len(self.reply.split())}})
        await send("message_stop", {})
        await response.write_eof()
        return response
