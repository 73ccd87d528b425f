"""Unit tests of the pure lifecycle pieces: listen specs, tokens, handshake parsing, config."""

from __future__ import annotations

import json
import os
import stat

import pytest

from sidecar import host_watch, lifecycle, platforms
from sidecar.client import Handshake
from sidecar.config import load_config
from sidecar.errors import InvalidRequest
from sidecar.lifecycle import is_loopback, parse_listen, resolve_token


def test_default_listen_is_a_socket_in_a_private_fresh_dir() -> None:
    a, b = parse_listen(None), parse_listen("unix")
    try:
        assert a.transport == "unix" and a.owned_dir is not None
        assert a.owned_dir != b.owned_dir
        assert stat.S_IMODE(os.stat(a.owned_dir).st_mode) == 0o700
        assert a.grpc_target == f"unix:{a.address}"
    finally:
        a.cleanup()
        b.cleanup()
    assert not a.owned_dir.exists()


@pytest.mark.parametrize(
    ("value", "transport", "address", "port"),
    [("tcp://127.0.0.1:0", "tcp", "127.0.0.1", 0), ("tcp://[::1]:5000", "tcp", "::1", 5000),
     ("unix:/tmp/x.sock", "unix", "/tmp/x.sock", 0)],
)
def test_listen_forms(value: str, transport: str, address: str, port: int) -> None:
    spec = parse_listen(value)
    assert (spec.transport, spec.address, spec.port) == (transport, address, port)
    assert spec.owned_dir is None
    assert is_loopback(spec)


@pytest.mark.parametrize("value", ["tcp://127.0.0.1", "tcp://:80", "http://x", "tcp://h:99999", "unix:"])
def test_bad_listen_values_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(value)


def test_without_unix_sockets_the_default_is_tcp_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    # What CPython on Windows looks like: no socket.AF_UNIX (the one place that reads it).
    monkeypatch.delattr(platforms.socket, "AF_UNIX")
    platforms.current.cache_clear()
    monkeypatch.setattr(platforms, "current", platforms.current.__wrapped__)
    assert lifecycle.default_transport() == "tcp"
    spec = parse_listen(None)
    assert (spec.transport, spec.address, spec.port, spec.owned_dir) == ("tcp", "127.0.0.1", 0, None)
    assert is_loopback(spec)
    with pytest.raises(ValueError, match="no Unix sockets"):
        parse_listen("unix")


def test_process_alive_never_signals_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # os.kill(pid, 0) is TerminateProcess on Windows: it must not be the liveness check there.
    seen: list[int] = []
    monkeypatch.setattr(platforms, "current", lambda: platforms.for_name("win32"))
    monkeypatch.setattr(host_watch, "_kernel32", lambda: None)
    monkeypatch.setattr(host_watch, "_windows_process_alive", lambda pid, kernel32: seen.append(pid) or True)
    monkeypatch.setattr(host_watch.os, "kill", lambda *a: pytest.fail("os.kill called on Windows"))
    assert host_watch.process_alive(1234) and seen == [1234]


def test_non_loopback_is_recognised() -> None:
    assert not is_loopback(parse_listen("tcp://0.0.0.0:0"))


def test_token_from_env_or_generated() -> None:
    assert resolve_token({"GAME_SIDECAR_TOKEN": "abc"}) == ("abc", False)
    t1, gen1 = resolve_token({})
    t2, _ = resolve_token({})
    assert gen1 and len(t1) >= 32 and t1 != t2


def test_handshake_parse_accepts_the_contract_and_rejects_the_rest() -> None:
    line = json.dumps({"sidecar": "game-sidecar", "protocol": 1, "transport": "tcp", "address": "127.0.0.1:5",
                       "pid": 7, "version": "0.1.0"})
    hs = Handshake.parse(line)
    assert hs.target == "127.0.0.1:5" and hs.token is None and hs.pid == 7
    for bad in ("hello", "[]", json.dumps({"sidecar": "other", "protocol": 1}),
                json.dumps({"sidecar": "game-sidecar", "protocol": 2, "transport": "unix", "address": "/x"}),
                json.dumps({"sidecar": "game-sidecar", "protocol": 1, "transport": "pipe", "address": "/x"})):
        with pytest.raises(ValueError):
            Handshake.parse(bad)


def test_config_defaults_to_the_local_profile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = load_config(None, env={})
    assert config.default_profile == "local" and config.profiles["local"].model.startswith("local/")
    path = tmp_path / "c.toml"
    path.write_text('[profiles.cloud]\nmodel = "openai/gpt-4o-mini"\napi_key_env = "OPENAI_API_KEY"\n')
    config = load_config(path, env={})
    assert config.default_profile == "cloud" and "local" in config.profiles


def test_config_errors_name_the_problem(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.toml"
    path.write_text('[profiles.cloud]\nmodel = "x"\nfallbacks = ["nope"]\n')
    with pytest.raises(InvalidRequest, match="nope"):
        load_config(path, env={})
    path.write_text("[runs]\nmax_concurent = 3\n")
    with pytest.raises(InvalidRequest, match="max_concurent"):
        load_config(path, env={})
    with pytest.raises(InvalidRequest, match="cannot read config"):
        load_config(tmp_path / "missing.toml", env={})


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("[runs]\nmax_concurrent = 0\n", "[runs] max_concurrent = 0: Expected `int` >= 1"),
        ("[runs]\nmax_queue = -1\n", "[runs] max_queue = -1: Expected `int` >= 0"),
        ("[state]\nmax_ops_per_batch = -1\n", "[state] max_ops_per_batch = -1: Expected `int` >= 1"),
        ('[profiles.a]\nmodel = "openai/x"\n[profiles.b]\nmodel = "y"\nmax_retries = -3\ndefault_profile = "a"\n',
         "[profiles.b] max_retries = -3: Expected `int` >= 0"),
        ('[profiles.a]\nmodel = "openai/x"\nfirst_token_timeout_s = -1\n',
         "[profiles.a] first_token_timeout_s = -1: Expected `float` > 0.0"),
        ('[profiles.a]\nmodel = ""\n', "[profiles.a] model = '': Expected `str` of length >= 1"),
        ('log_level = "loud"\n', "log_level = 'loud': Invalid enum value 'loud'"),
        ('[profiles.a]\nmodel = "openai/x"\n[profiles.b]\nmodel = "anthropic/y"\n',
         "default_profile is not set and 2 profiles are defined (a, b): set default_profile to one of them"),
    ],
)
def test_a_config_that_would_break_every_run_is_refused_naming_key_value_and_rule(tmp_path, toml, said) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: max_concurrent = 0 hung every run, max_retries = -3 ended runs INTERNAL,
    two provider profiles without a default silently served the embedded model."""
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(InvalidRequest) as refused:
        load_config(path, env={})
    assert refused.value.message.startswith(f"config {path}: ") and said in refused.value.message


def test_an_api_base_without_a_scheme_is_refused_and_an_unset_key_variable_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sidecar.config import unset_key_variables

    path = tmp_path / "c.toml"
    path.write_text('[profiles.a]\nmodel = "openai/x"\napi_base = "localhost:8000/v1"\n')
    with pytest.raises(InvalidRequest) as refused:
        load_config(path, env={})
    assert "[profiles.a] api_base = 'localhost:8000/v1' is not an http:// or https:// URL" in refused.value.message
    assert "'http://localhost:8000/v1'" in refused.value.message
    path.write_text('[profiles.a]\nmodel = "openai/x"\napi_key_env = "MY_KEY"\napi_base = "https://api.example.com/v1"\n')
    config = load_config(path, env={})
    assert unset_key_variables(config, {}) == [
        "profile 'a': its key variable MY_KEY is not set; the provider will likely refuse its runs"
    ]
    assert unset_key_variables(config, {"MY_KEY": "sk-test"}) == []
