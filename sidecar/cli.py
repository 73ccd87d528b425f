"""Command line: `game-sidecar serve` (what a game launches), `game-sidecar demo` and
`game-sidecar replay` (QA: recorded runs again, with the diff)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import TYPE_CHECKING

from sidecar import __version__, platforms
from sidecar.process_contract import (
    EXIT_CANNOT_START,
    EXIT_OK,
    EXIT_STATE_DIR_LOCKED,
    EXIT_USAGE,
    MAGIC_ENV,
    MAGIC_VALUE,
)

if TYPE_CHECKING:  # loaded inside the commands: `--version` and `--help` stay quick
    from sidecar.config import Config
    from sidecar.lifecycle import ListenSpec


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="game-sidecar", description="LLM narration sidecar for games (gRPC).")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and the embedded model's status")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve gRPC; launched by the game (see docs/protocol.md)")
    serve.add_argument("--listen", default=None,
                       help="unix (a socket in a fresh 0700 temp dir; the default where Unix sockets exist), "
                            "unix:PATH, or tcp://127.0.0.1:0 (the default on Windows)")
    serve.add_argument("--parent-pid", type=int, default=None,
                       help="exit when this process goes away (default: the spawning parent)")
    serve.add_argument("--no-magic", action="store_true", help=f"run by hand without {_magic_env()}")
    serve.add_argument("--config", default=None, help="TOML config file (model profiles, limits)")
    serve.add_argument("--state-dir", default=None, help="directory for the durable SQLite journal")
    serve.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"])
    serve.add_argument("--no-stdin-watch", action="store_true",
                       help="do not exit on stdin EOF (for hand use with stdin from /dev/null)")
    demo = sub.add_parser("demo", help="launch a sidecar like a game would and narrate a small scene")
    demo.add_argument("--config", default=None, help="TOML config file passed to the sidecar")
    replay = sub.add_parser("replay", help="run recorded runs again and diff the texts (QA; docs/runs.md)")
    replay.add_argument("file", help="what a sidecar started with GAME_SIDECAR_RECORD_RUNS=FILE wrote")
    replay.add_argument("--run-id", default="", help="replay only this run")
    replay.add_argument("--config", default=None, help="TOML config file (the profiles the runs used)")
    return parser


class _Version(argparse.Action):
    """`--version`: the version, then whether the embedded model can run here."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from sidecar.config import load_config
        from sidecar.errors import SidecarError
        from sidecar.llm.weights import find_local_model

        try:  # $GAME_SIDECAR_CONFIG may name the weights ([local_model] path)
            setting = load_config(None).local_model.path
        except SidecarError:
            setting = ""
        status = find_local_model(setting)
        model = (f"found ({status.weights_source}: {status.weights_path})" if status.ready
                 else f"not available: {status.problem}")
        print(f"game-sidecar {__version__}\nembedded model: {model}")
        parser.exit()


def _magic_env() -> str:
    return f"{MAGIC_ENV}={MAGIC_VALUE}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "replay":
        from sidecar.replay import replay

        return asyncio.run(replay(args.file, run_id=args.run_id, config=args.config))
    from sidecar.demo import run_demo

    return asyncio.run(run_demo(config=args.config))


def serve(args: argparse.Namespace) -> int:
    from sidecar import lifecycle

    env = dict(os.environ)
    # Before anything else: a SIGTERM during start-up ends the sidecar in order (below).
    held_signals = platforms.hold_stop_signals(platforms.current())
    if not args.no_magic and env.get(MAGIC_ENV) != MAGIC_VALUE:
        print(
            "game-sidecar: refusing to start: this process is meant to be launched by a game, which sets "
            f"{_magic_env()}. To run it by hand, pass --no-magic.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # Before anything can import litellm: no network fetch of the price map.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    handshake_fd = lifecycle.protect_stdout()

    from sidecar.config import load_config, unset_key_variables
    from sidecar.errors import SidecarError
    from sidecar.logs import setup_logging

    try:
        config = load_config(args.config, env)
        if args.state_dir:
            config.state_dir = args.state_dir
        if args.log_level:
            config.log_level = args.log_level
        listen = lifecycle.parse_listen(args.listen)
    except (SidecarError, ValueError) as exc:
        print(f"game-sidecar: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(config.log_level)
    for warning in unset_key_variables(config, env):
        logging.getLogger("sidecar").warning(warning)
    token, generated = lifecycle.resolve_token(env)
    parent_pid = args.parent_pid if args.parent_pid is not None else os.getppid()
    if held_signals:  # asked to stop before anything was started: nothing to clean up
        listen.cleanup()
        return EXIT_OK
    code = asyncio.run(
        _serve(config, listen, token, generated, handshake_fd, parent_pid, not args.no_stdin_watch, held_signals)
    )
    sys.stderr.flush()
    # Orderly shutdown is done; do not wait on background threads (model loads).
    os._exit(code)


async def _serve(
    config: Config,
    listen: ListenSpec,
    token: str,
    generated: bool,
    handshake_fd: int,
    parent_pid: int,
    watch_stdin: bool,
    held_signals: list[str],
) -> int:
    import logging

    from sidecar import host_watch, lifecycle
    from sidecar.server import SidecarServer
    from sidecar.state.dirlock import StateDirBusy

    log = logging.getLogger("sidecar.cli")
    if not lifecycle.is_loopback(listen):
        log.warning("listening on a non-loopback address", extra={"fields": {"address": listen.address}})
    server = SidecarServer(config, token, settle_heap=True)
    # The loop takes the stop signals before the server starts, and any held since the
    # process began: a stop at any moment from here on is orderly (the socket folder goes).
    loop = asyncio.get_running_loop()
    platforms.install_stop_signals(platforms.current(), loop, server.request_stop)
    for name in held_signals:
        server.request_stop(name)
    try:
        bound = await server.start(listen, load=False)
    except StateDirBusy as exc:
        # Its own exit code: the game's launcher can say "already running" rather than "broken".
        log.error("state dir in use", extra={"fields": {"error": str(exc), "state_dir": exc.state_dir}})
        print(f"game-sidecar: {exc}", file=sys.stderr)
        listen.cleanup()
        return EXIT_STATE_DIR_LOCKED
    except Exception as exc:
        log.error("cannot start", extra={"fields": {"error": str(exc)}})
        listen.cleanup()
        return EXIT_CANNOT_START
    lifecycle.write_handshake(handshake_fd, bound, token if generated else None)
    server.load()  # the model and litellm load from here on, off the handshake's path
    host_watch.watch_host(loop, server.request_stop, parent_pid, watch_stdin=watch_stdin)
    await server.wait_stop_requested()
    await server.stop()
    return EXIT_OK
