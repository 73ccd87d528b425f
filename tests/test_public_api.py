"""`sidecar.client` is what Python games import: its exported names and the
call shapes games write (parameter names, order, kinds and defaults; which
methods are coroutines and which stream) are pinned here, so a change to them is
a deliberate one that updates this file and the docs (README's example,
docs/protocol.md §1) together."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import grpc
import pytest

import sidecar.client as api

P = inspect.Parameter
POS, KW, VAR_KW, VAR_POS = P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY, P.VAR_KEYWORD, P.VAR_POSITIONAL
NONE = P.empty  # no default

EXPORTED = {
    "LaunchError",
    "ExitedBeforeHandshake",
    "StateDirLocked",
    "SpawnFailed",
    "MalformedHandshake",
    "HandshakeTimeout",
    "Handshake",
    "SidecarProcess",
    "SidecarClient",
    "error_reason",
    "auth_interceptors",
    "SessionOptionFields",
    "RunFields",
    "SidecarExit",
    "SidecarStatus",
    "SidecarGone",
    "WriteKept",
    "WriteNotApplied",
    "MAX_HELD_WRITES",
    "RestartPolicy",
    "RestartOutcome",
    "ResentBatch",
    "TrackedSession",
    "SessionLost",
    "CHUNK_BYTES",
    "is_retryable",
    "RETRYABLE_REASONS",
}

#: (object, attribute) -> [(parameter, kind, default)], `self` / `cls` left out.
SIGNATURES: dict[tuple[str, str], list[tuple[str, Any, Any]]] = {
    ("SidecarProcess", "launch"): [
        ("args", POS, ()),
        ("command", KW, None),
        ("env", KW, None),
        ("token", KW, None),
        ("timeout", KW, 10.0),
        ("on_stderr", KW, None),
        ("restart", KW, None),
    ],
    ("SidecarProcess", "close"): [("timeout", POS, 3.0)],
    ("SidecarProcess", "stop"): [("timeout", POS, 3.0)],
    ("SidecarProcess", "wait_exit"): [],
    ("SidecarProcess", "on_status"): [("callback", POS, NONE)],
    ("SidecarProcess", "on_exit"): [("callback", POS, NONE)],
    ("SidecarProcess", "on_restart"): [("callback", POS, NONE)],
    ("SidecarClient", "track"): [("session_id", POS, NONE), ("options", VAR_KW, NONE)],
    ("TrackedSession", "apply"): [("ops", POS, NONE), ("delta_id", POS, "")],
    ("TrackedSession", "replace_state"): [
        ("snapshot", POS, NONE),
        ("revision", POS, 0),
        ("allow_rewind", POS, False),
    ],
    ("RestartPolicy", "__init__"): [
        ("max_restarts", POS, 3),
        ("window_s", POS, 60.0),
        ("backoff_initial_s", POS, 0.25),
        ("backoff_max_s", POS, 5.0),
    ],
    ("SidecarProcess", "stderr_tail"): [],
    ("SidecarClient", "__init__"): [("target", POS, NONE), ("token", POS, NONE)],
    ("SidecarClient", "close"): [],
    ("SidecarClient", "get_info"): [("include_stats", POS, False)],
    ("SidecarClient", "shutdown"): [("reason", POS, "")],
    ("SidecarClient", "open_session"): [("session_id", POS, ""), ("options", VAR_KW, NONE)],
    ("SidecarClient", "close_session"): [("session_id", POS, NONE)],
    ("SidecarClient", "apply_deltas"): [
        ("session_id", POS, NONE),
        ("base_revision", POS, NONE),
        ("ops", POS, NONE),
        ("delta_id", POS, ""),
    ],
    ("SidecarClient", "replace_state"): [("request", POS, NONE)],
    ("SidecarClient", "import_session"): [("session_id", POS, NONE), ("blob", POS, NONE), ("overwrite", POS, False)],
    ("SidecarClient", "run"): [("request", POS, NONE), ("timeout", POS, None)],
    ("SidecarClient", "narrate"): [
        ("session_id", POS, NONE),
        ("text", POS, NONE),
        ("actor_id", POS, ""),
        ("fields", VAR_KW, NONE),
    ],
    ("SidecarClient", "continue_story"): [("session_id", POS, NONE), ("actor_id", POS, ""), ("fields", VAR_KW, NONE)],
    ("SidecarClient", "decide"): [
        ("session_id", POS, NONE),
        ("actor_id", POS, NONE),
        ("situation", POS, NONE),
        ("options", POS, NONE),
        ("fields", VAR_KW, NONE),
    ],
    ("SidecarClient", "open_tracked_session"): [("session_id", POS, NONE), ("options", VAR_KW, NONE)],
    ("SidecarClient", "get_state"): [("session_id", POS, NONE), ("kinds", POS, ()), ("entity_ids", POS, ())],
    ("SidecarClient", "export_session"): [("session_id", POS, NONE)],
    ("SidecarClient", "stream_deltas"): [("batches", POS, NONE)],
    ("SidecarClient", "cancel_run"): [("run_id", POS, NONE)],
    ("SidecarClient", "preview_prompt"): [("request", POS, NONE)],
    ("SidecarClient", "read_transcript"): [
        ("session_id", POS, NONE),
        ("actor_id", POS, ""),
        ("page_size", POS, 0),
        ("cursor", POS, ""),
    ],
    ("", "error_reason"): [("error", POS, NONE)],
    ("", "is_retryable"): [("error", POS, NONE)],
    ("", "auth_interceptors"): [("token", POS, NONE)],
    ("LaunchError", "__init__"): [("message", POS, NONE), ("stderr_tail", POS, "")],
    ("ExitedBeforeHandshake", "__init__"): [("returncode", POS, NONE), ("stderr_tail", POS, NONE)],
    ("MalformedHandshake", "__init__"): [("line", POS, NONE), ("why", POS, NONE), ("stderr_tail", POS, NONE)],
    ("SpawnFailed", "__init__"): [("command", POS, NONE), ("error", POS, NONE)],
    ("Handshake", "parse"): [("line", POS, NONE)],
}

COROUTINES = {
    ("SidecarProcess", "launch"),
    ("SidecarProcess", "close"),
    ("SidecarProcess", "stop"),
    ("SidecarProcess", "wait_exit"),
    ("SidecarClient", "track"),
    ("SidecarClient", "open_tracked_session"),
    ("SidecarClient", "decide"),
    ("TrackedSession", "apply"),
    ("TrackedSession", "replace_state"),
    ("SidecarClient", "close"),
    ("SidecarClient", "get_info"),
    ("SidecarClient", "shutdown"),
    ("SidecarClient", "open_session"),
    ("SidecarClient", "close_session"),
    ("SidecarClient", "apply_deltas"),
    ("SidecarClient", "replace_state"),
    ("SidecarClient", "import_session"),
    ("SidecarClient", "get_state"),
    ("SidecarClient", "export_session"),
    ("SidecarClient", "cancel_run"),
    ("SidecarClient", "preview_prompt"),
    ("SidecarClient", "read_transcript"),
}
STREAMS = {("SidecarClient", "run"), ("SidecarClient", "narrate"), ("SidecarClient", "continue_story"),
           ("SidecarClient", "stream_deltas")}


def _get(owner: str, name: str) -> Any:
    return getattr(getattr(api, owner) if owner else api, name)


def test_the_exported_names_are_exactly_these() -> None:
    assert set(api.__all__) == EXPORTED
    assert len(api.__all__) == len(EXPORTED)
    for name in api.__all__:
        assert hasattr(api, name), name


@pytest.mark.parametrize(("owner", "name"), sorted(SIGNATURES))
def test_call_shapes_games_write_are_pinned(owner: str, name: str) -> None:
    params = [p for p in inspect.signature(_get(owner, name)).parameters.values() if p.name not in ("self", "cls")]
    assert [(p.name, p.kind, p.default) for p in params] == SIGNATURES[(owner, name)]


@pytest.mark.parametrize(("owner", "name"), sorted(SIGNATURES))
def test_coroutines_stay_coroutines_and_streams_stay_async_iterators(owner: str, name: str) -> None:
    fn = _get(owner, name)
    assert inspect.iscoroutinefunction(fn) == ((owner, name) in COROUTINES)
    assert inspect.isasyncgenfunction(fn) == ((owner, name) in STREAMS)


def test_launch_errors_keep_their_hierarchy() -> None:
    assert issubclass(api.LaunchError, Exception)
    for cls in (api.SpawnFailed, api.ExitedBeforeHandshake, api.MalformedHandshake, api.HandshakeTimeout):
        assert cls.__mro__[1] is api.LaunchError, cls
    # docs/protocol.md §1: exit code 3 is a distinct error that is still "exited before handshake".
    assert api.StateDirLocked.__mro__[1] is api.ExitedBeforeHandshake
    err = api.StateDirLocked(3, "held by pid 42")
    assert (err.returncode, err.stderr_tail) == (3, "held by pid 42")


def test_handshake_fields_and_target() -> None:
    assert [f.name for f in dataclasses.fields(api.Handshake)] == [
        "transport",
        "address",
        "pid",
        "version",
        "protocol",
        "token",
    ]
    line = '{"sidecar":"game-sidecar","protocol":1,"transport":"unix","address":"/tmp/s.sock","pid":7}'
    hs = api.Handshake.parse(line)
    assert (hs.target, hs.pid, hs.token) == ("unix:/tmp/s.sock", 7, None)
    with pytest.raises(ValueError, match="unsupported protocol 2"):
        api.Handshake.parse(line.replace('"protocol":1', '"protocol":2'))


async def test_the_client_exposes_the_three_raw_stubs() -> None:
    client = api.SidecarClient("unix:/nonexistent/never-dialled.sock", "t")
    try:
        assert isinstance(client.channel, grpc.aio.Channel)
        stubs = {name: type(getattr(client, name)).__name__ for name in ("sidecar", "sessions", "agent")}
        assert stubs == {"sidecar": "SidecarServiceStub", "sessions": "SessionServiceStub", "agent": "AgentServiceStub"}
    finally:
        await client.close()


def test_sidecar_gone_is_a_grpc_error_with_its_reason_and_exit() -> None:
    """Handlers written for gRPC errors catch it; the reason tells it from PROVIDER_UNAVAILABLE."""
    exit = api.SidecarExit(None, 9, ("boom",), requested=False)
    err = api.SidecarGone("/tmp/x/sidecar.sock", exit)
    assert isinstance(err, grpc.aio.AioRpcError) and err.code() == grpc.StatusCode.UNAVAILABLE
    assert api.error_reason(err) == err.reason == "SIDECAR_GONE"
    assert err.exit is exit and err.endpoint == "/tmp/x/sidecar.sock"
    assert str(err) == ("sidecar at /tmp/x/sidecar.sock is gone: killed by signal 9 (SIGKILL), "
                        "not requested; last stderr: boom")
    assert [s.name for s in api.SidecarStatus] == ["STARTING", "READY", "RESTARTING", "STOPPED", "FAILED"]
    assert [f.name for f in dataclasses.fields(api.SidecarExit)] == [
        "code", "signal", "stderr_tail", "requested", "hung", "pid",
    ]
    assert [api.RestartPolicy().backoff(n) for n in (1, 2, 3, 6, 7)] == [0.25, 0.5, 1.0, 5.0, 5.0]
