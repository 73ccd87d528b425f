"""`SidecarClient`: the calls a game makes (the same operations as the C# and C++
clients), with the bearer token on every call (sidecar/client/_metadata.py).

The client's stubs sit on a swappable channel (sidecar/client/_connection.py):
when the process exits every call fails with `SidecarGone`, and a supervised
restart (`SidecarProcess.launch(restart=RestartPolicy())`) swaps the new process's
link in through `connection`, under the same client and stubs. `track()` gives a
`TrackedSession` (sidecar/client/_tracked.py), which a restart re-opens.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from typing import TypedDict, TypeVar, Unpack

import grpc

from sidecar.client._connection import Connection, SwappableChannel, open_link
from sidecar.client._tracked import TrackedSession
from sidecar.v1 import agent_service_pb2 as agent_pb
from sidecar.v1 import agent_service_pb2_grpc as agent_grpc
from sidecar.v1 import session_service_pb2 as session_pb
from sidecar.v1 import session_service_pb2_grpc as session_grpc
from sidecar.v1 import sidecar_service_pb2 as sidecar_pb
from sidecar.v1 import sidecar_service_pb2_grpc as sidecar_grpc
from sidecar.v1 import state_pb2, types_pb2

__all__ = ["CHUNK_BYTES", "RunFields", "SessionOptionFields", "SidecarClient"]

#: Pieces of a world sent in chunks (ReplaceState, ImportSession over this size): the
#: server's receive limit, max_request_bytes, is at least 1 MiB (sidecar/config.py).
CHUNK_BYTES = 512 * 1024
_Piece = TypeVar("_Piece", session_pb.ReplaceStateChunkedRequest, session_pb.ImportSessionChunkedRequest)


def _pieces(data: bytes, piece: type[_Piece]) -> Iterable[_Piece]:
    view = memoryview(data)
    for start in range(0, len(data), CHUNK_BYTES):
        yield piece(data=bytes(view[start : start + CHUNK_BYTES]))


class SessionOptionFields(TypedDict, total=False):
    """`SidecarClient.open_session`'s keyword arguments: the fields of `SessionOptions`
    (docs/protocol.md), typed as the generated message's constructor takes them."""

    alias_mode: session_pb.AliasMode | str
    expose_moment: session_pb.MomentExposure | Mapping[str, object]
    coordinate_fields: Iterable[str]
    exposed_coordinate_fields: Iterable[str]
    budget_tokens: int
    profile: str
    memory_bank: bool


class RunFields(TypedDict, total=False):
    """`SidecarClient.narrate`'s keyword arguments: the `RunRequest` fields a
    narration may set besides the session, the actor and the text."""

    focus_ids: Iterable[str]
    moment: types_pb2.GameMoment | Mapping[str, object]
    min_revision: int
    profile: str
    limits: agent_pb.GenerationLimits | Mapping[str, object]
    run_id: str
    urgent: bool
    budget_tokens: int
    seed: int


class SidecarClient:
    """Async client. Raw stubs are `sidecar`, `sessions` and `agent`; the helpers
    below cover what a game does most."""

    def __init__(self, target: str, token: str | None) -> None:
        #: The seam a supervised restart swaps the process's link through
        #: (sidecar/client/_connection.py); a game reads `channel`, `endpoint` and `gone`.
        self.connection = Connection(open_link(target, token))
        # Built once: a restart swaps the link under them.
        swappable = SwappableChannel(lambda: self.connection.link)
        self.sidecar = sidecar_grpc.SidecarServiceStub(swappable)
        self.sessions = session_grpc.SessionServiceStub(swappable)
        self.agent = agent_grpc.AgentServiceStub(swappable)
        #: Sessions opened with `track()`, by ID; a supervised restart re-opens them.
        self.tracked: dict[str, TrackedSession] = {}

    @property
    def channel(self) -> grpc.aio.Channel:
        """The current process's channel (a restart replaces it; the stubs follow)."""
        return self.connection.link.channel

    @property
    def endpoint(self) -> str:
        """The current socket path or host:port."""
        return self.connection.link.endpoint

    @property
    def gone(self) -> bool:
        """The process has exited, or its restart is not READY yet: calls fail with SidecarGone."""
        return self.connection.link.refusing() is not None

    async def close(self) -> None:
        await self.connection.link.channel.close()

    async def open_tracked_session(self, session_id: str, **options: Unpack[SessionOptionFields]) -> TrackedSession:
        """`track()` under the C# client's name (`OpenTrackedSessionAsync`)."""
        return await self.track(session_id, **options)

    async def track(self, session_id: str, **options: Unpack[SessionOptionFields]) -> TrackedSession:
        """Open (or resume) a session and return a handle that keeps its revision and its
        unacknowledged writes across a supervised restart (docs/protocol.md §1, "Tracked
        writes across a restart"). One handle per session: tracking a session this client
        tracks already returns that handle, as it is (no call; `options` are the first
        track()'s), so no write of it can be left out of a restart."""
        if session_id in self.tracked:
            return self.tracked[session_id]
        opened = await self.open_session(session_id, **options)
        if opened.session_id in self.tracked:  # a track() of it that ran meanwhile
            return self.tracked[opened.session_id]
        tracked = TrackedSession(self, opened.session_id, opened.revision,
                                 session_pb.SessionOptions(**options))
        self.tracked[tracked.session_id] = tracked
        return tracked

    # The stubs' methods are untyped (no stubs for *_grpc.py): each helper names the reply type.
    async def get_info(self, include_stats: bool = False) -> sidecar_pb.GetInfoResponse:
        reply: sidecar_pb.GetInfoResponse = await self.sidecar.GetInfo(
            sidecar_pb.GetInfoRequest(include_stats=include_stats)
        )
        return reply

    async def shutdown(self, reason: str = "") -> None:
        self.connection.link.shutdown_requested = True
        await self.sidecar.Shutdown(sidecar_pb.ShutdownRequest(reason=reason))

    async def open_session(
        self, session_id: str = "", **options: Unpack[SessionOptionFields]
    ) -> session_pb.OpenSessionResponse:
        request = session_pb.OpenSessionRequest(session_id=session_id, options=session_pb.SessionOptions(**options))
        reply: session_pb.OpenSessionResponse = await self.sessions.OpenSession(request)
        return reply

    async def close_session(self, session_id: str) -> session_pb.CloseSessionResponse:
        self.tracked.pop(session_id, None)  # a restart must not re-open it
        reply: session_pb.CloseSessionResponse = await self.sessions.CloseSession(
            session_pb.CloseSessionRequest(session_id=session_id)
        )
        return reply

    async def apply_deltas(self, session_id: str, base_revision: int, ops: Sequence[state_pb2.DeltaOp],
                           delta_id: str = "") -> session_pb.ApplyDeltasResponse:
        if not delta_id:
            delta_id = os.urandom(8).hex()
        request = session_pb.ApplyDeltasRequest(session_id=session_id, base_revision=base_revision,
                                                delta_id=delta_id, ops=list(ops))
        reply: session_pb.ApplyDeltasResponse = await self.sessions.ApplyDeltas(request)
        return reply

    async def replace_state(self, request: session_pb.ReplaceStateRequest) -> session_pb.ReplaceStateResponse:
        """ReplaceState; a request over CHUNK_BYTES goes in pieces (ReplaceStateChunked),
        so a whole world fits however big (up to the server's max_snapshot_bytes)."""
        if request.ByteSize() <= CHUNK_BYTES:
            reply: session_pb.ReplaceStateResponse = await self.sessions.ReplaceState(request)
        else:
            pieces = _pieces(request.SerializeToString(), session_pb.ReplaceStateChunkedRequest)
            chunked: session_pb.ReplaceStateChunkedResponse = await self.sessions.ReplaceStateChunked(pieces)
            reply = session_pb.ReplaceStateResponse(revision=chunked.revision)
        return reply

    async def get_state(self, session_id: str, kinds: Iterable[types_pb2.EntityKind | str] = (),
                        entity_ids: Iterable[str] = ()) -> session_pb.GetStateResponse:
        """The session's state: the whole world, or only entities of `kinds` / with `entity_ids`."""
        request = session_pb.GetStateRequest(session_id=session_id, kinds=list(kinds), entity_ids=list(entity_ids))
        reply: session_pb.GetStateResponse = await self.sessions.GetState(request)
        return reply

    async def export_session(self, session_id: str) -> session_pb.ExportSessionResponse:
        """The session as a save blob (`import_session` loads it again)."""
        reply: session_pb.ExportSessionResponse = await self.sessions.ExportSession(
            session_pb.ExportSessionRequest(session_id=session_id)
        )
        return reply

    async def stream_deltas(
        self, batches: AsyncIterable[session_pb.StreamDeltasRequest] | Iterable[session_pb.StreamDeltasRequest]
    ) -> AsyncIterator[session_pb.StreamDeltasResponse]:
        """StreamDeltas: one batch per request, one answer per batch, in order. A bad batch
        is answered with its error and the stream goes on (docs/protocol.md §5)."""
        call = self.sessions.StreamDeltas(batches)
        try:
            async for response in call:
                yield response
        finally:
            call.cancel()

    async def import_session(self, session_id: str, blob: bytes, overwrite: bool = False
                             ) -> session_pb.ImportSessionResponse:
        """ImportSession; a save over CHUNK_BYTES goes in pieces (ImportSessionChunked)."""
        request = session_pb.ImportSessionRequest(session_id=session_id, blob=blob, overwrite=overwrite)
        if request.ByteSize() <= CHUNK_BYTES:
            reply: session_pb.ImportSessionResponse = await self.sessions.ImportSession(request)
        else:
            pieces = _pieces(request.SerializeToString(), session_pb.ImportSessionChunkedRequest)
            chunked: session_pb.ImportSessionChunkedResponse = await self.sessions.ImportSessionChunked(pieces)
            reply = session_pb.ImportSessionResponse(session_id=chunked.session_id, revision=chunked.revision)
        return reply

    async def run(self, request: agent_pb.RunRequest, timeout: float | None = None) -> AsyncIterator[agent_pb.RunEvent]:
        """Stream the run's events; raises grpc.aio.AioRpcError when it fails."""
        call = self.agent.Run(request, timeout=timeout)
        try:
            async for response in call:
                yield response.event
        finally:
            call.cancel()

    async def narrate(
        self, session_id: str, text: str, actor_id: str = "", **fields: Unpack[RunFields]
    ) -> AsyncIterator[str]:
        """Just the text of a narration, as it streams."""
        request = agent_pb.RunRequest(session_id=session_id, actor_id=actor_id,
                                      narrate=agent_pb.NarrateInput(text=text), **fields)
        async for event in self.run(request):
            if event.WhichOneof("kind") == "text":
                yield event.text.text

    async def continue_story(
        self, session_id: str, actor_id: str = "", **fields: Unpack[RunFields]
    ) -> AsyncIterator[str]:
        """Just the text of a Continue (the actor carries on from its last reply), as it streams."""
        request = agent_pb.RunRequest(session_id=session_id, actor_id=actor_id,
                                      continue_story=agent_pb.ContinueInput(), **fields)
        async for event in self.run(request):
            if event.WhichOneof("kind") == "text":
                yield event.text.text

    async def decide(
        self, session_id: str, actor_id: str, situation: str, options: Sequence[agent_pb.ActionOption],
        **fields: Unpack[RunFields],
    ) -> agent_pb.ChosenAction:
        """Have `actor_id` choose one of `options`; returns the choice (`action_id` is the game's ID
        from the option). Raises the run's error (INVALID_CHOICE when no valid choice came within
        the attempts). The C# client's `DecideAsync`."""
        request = agent_pb.RunRequest(session_id=session_id, actor_id=actor_id, **fields,
                                      decision=agent_pb.DecisionInput(situation=situation, options=list(options)))
        chosen: agent_pb.ChosenAction | None = None
        async for event in self.run(request):
            if event.WhichOneof("kind") == "action":
                chosen = event.action
        if chosen is None:
            raise RuntimeError(f"the decision run in session {session_id!r} ended without a ChosenAction")
        return chosen

    async def cancel_run(self, run_id: str) -> agent_pb.CancelRunResponse:
        """Stop a run by its ID (known before the run's first event when its request sets
        `run_id`); the model call upstream stops at once. RUN_NOT_FOUND for an unknown run."""
        reply: agent_pb.CancelRunResponse = await self.agent.CancelRun(agent_pb.CancelRunRequest(run_id=run_id))
        return reply

    async def preview_prompt(self, request: agent_pb.RunRequest) -> agent_pb.PreviewPromptResponse:
        """The prompt `request` would send, with each section's tokens; nothing is sent to
        a model or recorded."""
        reply: agent_pb.PreviewPromptResponse = await self.agent.PreviewPrompt(
            agent_pb.PreviewPromptRequest(run=request)
        )
        return reply

    async def read_transcript(self, session_id: str, actor_id: str = "", page_size: int = 0,
                              cursor: str = "") -> agent_pb.ReadTranscriptResponse:
        """A page of the session's transcript (what was said, by whom, with mentions);
        `cursor` is the previous page's `next_cursor`."""
        request = agent_pb.ReadTranscriptRequest(session_id=session_id, actor_id=actor_id, page_size=page_size,
                                                 cursor=cursor)
        reply: agent_pb.ReadTranscriptResponse = await self.agent.ReadTranscript(request)
        return reply
