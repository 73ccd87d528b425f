"""A fake OpenAI-compatible chat completions server (aiohttp) that streams SSE
chunks at a set rate and misbehaves on cue. The cue is the model name the
client asks for (litellm strips the "openai/" prefix):

    ok            stream `chunks` chunks, one every `interval_s`, then usage and [DONE]
                  (`reply=`: that text, cut into `chunks` pieces)
    slow          like ok, after `slow_first_s` before the first chunk
    stall         send the headers, then nothing (a first-token timeout)
    endless       stream forever (cancellation must close the connection)
    http429 / http500 / http503 / http401 / http400
                  that status with an OpenAI-style error body
    toolong       400 as OpenAI answers a prompt over the context window
    filtered      400 as Azure OpenAI answers a prompt its content filter caught
    drop          stream half, then cut the connection (no [DONE])
    garbage       stream a chunk, then lines that are not JSON
    flaky         the first request answers 503, the next ones stream like ok
    runaway       ignore max_tokens: stream `runaway_bytes` of text in chunks of
                  `runaway_chunk_chars` characters, as fast as the client reads

It records what it saw: requests, the chunks it sent (with send times, for
lag figures) and when a client disconnected mid-stream.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakeOpenAI", "chunk_text"]


def chunk_text(request_no: int, seq: int) -> str:
    """The text of chunk `seq` of request `request_no`: parseable by benchmarks."""
    return f"w{request_no}_{seq} "


#: Real providers' refusals (status 400), as their bodies read.
_REFUSALS = {
    "toolong": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    },
    "filtered": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
        "policy. Please modify your prompt and retry.",
        "type": None,
        "param": "prompt",
        "code": "content_filter",
    },
}


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: The raw HTTP body of each request, as it arrived (privacy tests search these bytes).
    bodies: list[bytes] = field(default_factory=list)
    #: The client's (host, port) of each request: the same port again = a reused connection.
    peers: list[tuple[str, int]] = field(default_factory=list)
    #: (request number, monotonic time) of each disconnect noticed mid-stream.
    disconnects: list[tuple[int, float]] = field(default_factory=list)
    #: (request number, seq) -> monotonic time the chunk was written.
    sent: dict[tuple[int, int], float] = field(default_factory=dict)
    #: Bytes of SSE written (all modes; a write waits until the socket takes it).
    bytes_sent: int = 0
    active: int = 0
    max_active: int = 0
    completed: int = 0


class FakeOpenAI:
    def __init__(
        self,
        *,
        chunks: int = 12,
        interval_s: float = 0.002,
        slow_first_s: float = 1.0,
        record_sends: bool = False,
        stamp: bool = False,
        port: int = 0,
        on_disconnect: Callable[[int, float], None] | None = None,
        runaway_bytes: int = 40_000_000,
        runaway_chunk_chars: int = 400_000,
        reply: str = "",
    ) -> None:
        #: What "ok" streams, cut into `chunks` pieces ("" = the numbered `chunk_text`s).
        self.reply = reply
        self.runaway_bytes = runaway_bytes
        self.runaway_chunk_chars = runaway_chunk_chars
        self.chunks = chunks
        self.interval_s = interval_s
        self.slow_first_s = slow_first_s
        self.record_sends = record_sends
        #: Chunk text is "t<monotonic ns> ": the receiver computes each chunk's lag
        #: (CLOCK_MONOTONIC is system-wide, so this works across processes).
        self.stamp = stamp
        self.port = port
        #: Called with (request number, monotonic time) when a client leaves mid-stream.
        self.on_disconnect = on_disconnect
        self.seen = Seen()
        self._flaked = False
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the endpoint -------------------------------------------------------

    def _error(self, status: int) -> web.Response:
        kinds = {429: "rate_limit_exceeded", 401: "invalid_api_key", 400: "invalid_request_error"}
        body = {"error": {"message": f"fake {status}", "type": kinds.get(status, "server_error"), "code": None}}
        return web.json_response(body, status=status)

    def _chunk(self, model: str, text: str | None, finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": {"content": text} if text is not None else {}, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.seen.bodies.append(raw)
        body = json.loads(raw)
        n = len(self.seen.requests)
        self.seen.requests.append(body)
        self.seen.peers.append(request.transport.get_extra_info("peername") if request.transport else ("", 0))
        mode = str(body.get("model", "ok"))
        known = ("ok", "slow", "stall", "endless", "drop", "garbage", "flaky", "toolong", "filtered", "runaway")
        if mode not in known and not mode.startswith("http"):
            mode = "ok"  # any real model name (price-map tests) streams normally
        if mode == "flaky":
            if not self._flaked:
                self._flaked = True
                return self._error(503)
            mode = "ok"
        if mode.startswith("http"):
            return self._error(int(mode[4:]))
        if mode in _REFUSALS:
            return web.json_response({"error": _REFUSALS[mode]}, status=400)
        if not body.get("stream"):
            return self._error(400)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        self.seen.active += 1
        self.seen.max_active = max(self.seen.max_active, self.seen.active)
        try:
            await self._stream(request, resp, mode, n, body)
        except (asyncio.CancelledError, ConnectionResetError):
            self.seen.disconnects.append((n, time.monotonic()))
            if self.on_disconnect is not None:
                self.on_disconnect(n, time.monotonic())
            raise
        finally:
            self.seen.active -= 1
        return resp

    async def _stream(self, request: web.Request, resp: web.StreamResponse, mode: str, n: int, body: dict) -> None:
        model = mode
        if mode == "stall":
            await asyncio.Event().wait()  # until the client gives up (handler cancellation)
        if mode == "slow":
            await asyncio.sleep(self.slow_first_s)
        await resp.write(self._chunk(model, ""))  # the role chunk real servers send first
        if mode == "runaway":
            await self._runaway(resp, model)
            return
        seq = 0
        total = self.chunks
        while mode == "endless" or seq < total:
            if mode == "drop" and seq == total // 2:
                assert request.transport is not None
                request.transport.close()
                self.seen.disconnects.append((n, time.monotonic()))
                return
            if mode == "garbage" and seq == 1:
                await resp.write(b"data: {this is not json\n\n")
                await resp.write(b"data: [[[\n\n")
            if seq:
                await asyncio.sleep(self.interval_s)
            if self.record_sends:
                self.seen.sent[(n, seq)] = time.monotonic()
            text = f"t{time.monotonic_ns()} " if self.stamp else chunk_text(n, seq)
            if self.reply:
                size = -(-len(self.reply) // total)
                text = self.reply[seq * size : (seq + 1) * size]
            await resp.write(self._chunk(model, text))
            seq += 1
        await resp.write(self._chunk(model, None, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": 42,
                    "completion_tokens": total,
                    "total_tokens": 42 + total,
                    "prompt_tokens_details": {"cached_tokens": 32},
                },
            }
            await resp.write(b"data: " + json.dumps(usage).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        self.seen.completed += 1

    async def _runaway(self, resp: web.StreamResponse, model: str) -> None:
        sentence = "The rain keeps falling on the old roofs. "
        text = (sentence * (self.runaway_chunk_chars // len(sentence) + 1))[: self.runaway_chunk_chars]
        line = self._chunk(model, text)
        while self.seen.bytes_sent < self.runaway_bytes:
            await resp.write(line)
            self.seen.bytes_sent += len(line)
        await resp.write(self._chunk(model, None, "stop"))
        await resp.write(b"data: [DONE]\n\n")
        self.seen.completed += 1


def main() -> None:
    """`python tests/fakes/openai_server.py [--chunks N] [--interval-ms X] [--stamp]`:
    serve until stdin closes; prints the base URL as the first stdout line, then
    "disconnect <monotonic ns>" whenever a client leaves mid-stream."""
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--stamp", action="store_true")
    args = parser.parse_args()

    async def serve() -> None:
        def report(_n: int, _t: float) -> None:
            print(f"disconnect {time.monotonic_ns()}", flush=True)

        server = FakeOpenAI(
            chunks=args.chunks, interval_s=args.interval_ms / 1000, stamp=args.stamp, on_disconnect=report
        )
        print(await server.start(), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        await server.stop()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
