#!/usr/bin/env python3
"""How the default voice reads (issue 29, "Figures"): the scenes of scenes/ narrated, spoken
and decided by the real sidecar, launched the way a game launches it, and each reply checked.

For each scene (scenes/README.md) the scene goes in as deltas; then each event is recorded and
narrated (narrator run), each dialogue line is answered by its NPC, and each decision is made by
its NPC. The text checked is the streamed `text` events concatenated: what the game would show.
The checks are scripts/bench/voice_metrics.py's; the figures scripts/bench/voice_report.py's.

Usage:
  .venv/bin/python scripts/bench/bench_voice.py [--scenes scenes] [--limit N] [--config FILE]
      [--profile NAME] [--alias-mode display|handle] [--verbatim 12] [--json OUT] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shlex
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import grpc  # noqa: E402
from voice_metrics import check_reply, wrong_names  # noqa: E402
from voice_report import Reply, markdown, pick_verbatim, summarize, table, verdict  # noqa: E402
from voice_scenes import Scene, load_scenes  # noqa: E402

from sidecar.client import SidecarClient, SidecarProcess, error_reason  # noqa: E402
from sidecar.replay import replay  # noqa: E402
from sidecar.runs import replay_log  # noqa: E402
from sidecar.v1 import agent_service_pb2 as agent_pb  # noqa: E402
from sidecar.v1 import session_service_pb2 as session_pb  # noqa: E402
from sidecar.v1 import state_pb2, types_pb2  # noqa: E402

KIND = {
    "player": types_pb2.ENTITY_KIND_PLAYER, "character": types_pb2.ENTITY_KIND_CHARACTER,
    "item": types_pb2.ENTITY_KIND_ITEM, "location": types_pb2.ENTITY_KIND_LOCATION,
    "faction": types_pb2.ENTITY_KIND_FACTION, "other": types_pb2.ENTITY_KIND_OTHER,
}
ALIAS_MODE = {"display": session_pb.ALIAS_MODE_DISPLAY_NAME, "handle": session_pb.ALIAS_MODE_KIND}
RUN_TIMEOUT_S = 180.0


def fixed_texts() -> list[str]:
    """The prompt's fixed words, for the echo check: the system rules, labels and default personas
    (sidecar.prompts.fixed), and the embedded model's worked example where it has one."""
    texts: list[str] = []
    try:
        from sidecar.prompts.fixed import FIXED_TEXTS

        texts += list(FIXED_TEXTS)
    except ImportError:
        pass
    try:
        from sidecar.llm import local

        texts += [v for k, v in vars(local).items() if k.isupper() and isinstance(v, str) and len(v) > 40]
    except ImportError:
        pass
    return texts


def _value(value: object) -> types_pb2.Value:
    if isinstance(value, bool):
        return types_pb2.Value(bool_value=value)
    if isinstance(value, int):
        return types_pb2.Value(int_value=value)
    if isinstance(value, float):
        return types_pb2.Value(double_value=value)
    return types_pb2.Value(string_value=str(value))


def scene_ops(scene: Scene) -> list[state_pb2.DeltaOp]:
    """The scene as one batch of deltas: places outermost first, then whoever holds things, then the
    things held (a location must exist when set), then the scene facts."""
    def depth(eid: str) -> int:
        entity, n = scene.entity(eid), 0
        while entity is not None and entity.location and n < 16:
            entity, n = scene.entity(entity.location), n + 1
        return n

    ops = []
    for e in sorted(scene.entities, key=lambda e: (e.kind != "location", depth(e.id))):
        fields = {k: types_pb2.FieldValue(value=_value(v)) for k, v in e.fields.items()}
        entity = state_pb2.Entity(id=e.id, kind=KIND[e.kind], name=e.name, description=e.description,
                                  location_id=e.location, fields=fields, tags=list(e.tags))
        ops.append(state_pb2.DeltaOp(upsert_entity=state_pb2.UpsertEntityOp(entity=entity)))
    ops += [state_pb2.DeltaOp(set_scene_fact=state_pb2.SetSceneFactOp(key=k, value=_value(v)))
            for k, v in scene.facts.items()]
    return ops


async def run_one(client: SidecarClient, request: agent_pb.RunRequest, reply: Reply) -> None:
    """Stream one run into `reply`: the text as the game shows it, usage, timings, the choice."""
    pieces: list[str] = []
    try:
        async for event in client.run(request, timeout=RUN_TIMEOUT_S):
            kind = event.WhichOneof("kind")
            if kind == "started":
                reply.model = event.started.model
            elif kind == "text":
                pieces.append(event.text.text)
            elif kind == "rejected":
                reply.rejected.append(event.rejected.reason)
                pieces.clear()  # that attempt's text is void
            elif kind == "action":
                reply.action_id, reply.message = event.action.action_id, event.action.message
                reply.parameters = dict(event.action.parameters)
            elif kind == "usage":
                reply.completion_tokens = event.usage.completion_tokens
                reply.prompt_tokens = event.usage.prompt_tokens
            elif kind == "finished":
                f = event.finished
                reply.finish_reason = agent_pb.FinishReason.Name(f.finish_reason).removeprefix("FINISH_REASON_")
                reply.first_token_ms, reply.total_ms = f.timings.first_token_ms, f.timings.total_ms
                reply.attempts = f.attempts
    except grpc.aio.AioRpcError as error:
        reply.error = error_reason(error) or error.code().name
    reply.text = "".join(pieces)


def _named(scene: Scene, reply: Reply) -> tuple[list[str], str]:
    """What `reply`'s input named, and where the narrator stood, found from the scene by the input."""
    if reply.kind == "narration":
        event = next((e for e in scene.events if e.text == reply.input), None)
        return (list(event.entity_ids), event.location) if event else ([], "")
    if reply.kind == "dialogue":
        return [line.speaker for line in scene.dialogue if line.actor == reply.actor and line.text == reply.input], ""
    decision = next((d for d in scene.decisions if d.actor == reply.actor and d.situation == reply.input), None)
    return ([o.target_id for o in decision.options if o.target_id] if decision else []), ""


def judge(reply: Reply, scene: Scene, fixed: list[str]) -> None:
    """Fill in `reply`'s failed checks and wrong names (decisions: names only, in text and message).
    An echo is the input or any other game text of the scene (an earlier event in the history)."""
    if reply.kind != "decision":
        game_text = [reply.input, *(e.text for e in scene.events), *(line.text for line in scene.dialogue)]
        reply.problems = check_reply(reply.text, reply.kind, scene.engine_ids, game_text, fixed)
    named, place = _named(scene, reply)
    seen = scene.perceived(reply.actor, named, place)
    ok = [n for e in scene.entities if e.id in seen for n in e.names]
    others = [n for e in scene.entities if e.id not in seen for n in e.names]
    reply.wrong_names = wrong_names(f"{reply.text}\n{reply.message}", ok, others, scene.engine_ids)


async def bench_scene(client: SidecarClient, scene: Scene, args: argparse.Namespace, fixed: list[str]) -> list[Reply]:
    session = f"voice-{scene.id}"
    opened = await client.open_session(session, alias_mode=ALIAS_MODE[args.alias_mode])
    revision = (await client.apply_deltas(session, opened.revision, scene_ops(scene))).revision
    replies: list[Reply] = []
    base = {"session_id": session, "profile": args.profile}
    for event in scene.events[: args.limit or None]:
        place = event.location or scene.place_of(scene.player)
        game_event = state_pb2.GameEvent(text=event.text, entity_ids=list(event.entity_ids), location_id=place)
        record = state_pb2.DeltaOp(record_event=state_pb2.RecordEventOp(event=game_event))
        revision = (await client.apply_deltas(session, revision, [record])).revision
        reply = Reply(scene.id, "narration", "", event.text)
        request = agent_pb.RunRequest(**base, min_revision=revision,
                                      narrate=agent_pb.NarrateInput(text=event.text, entity_ids=list(event.entity_ids)))
        await run_one(client, request, reply)
        judge(reply, scene, fixed)
        replies.append(_progress(reply))
    for line in scene.dialogue:
        reply = Reply(scene.id, "dialogue", line.actor, line.text)
        request = agent_pb.RunRequest(**base, actor_id=line.actor,
                                      dialogue=agent_pb.DialogueInput(speaker_id=line.speaker, text=line.text))
        await run_one(client, request, reply)
        judge(reply, scene, fixed)
        replies.append(_progress(reply))
    for decision in scene.decisions:
        reply = Reply(scene.id, "decision", decision.actor, decision.situation, sensible=decision.sensible)
        options = [agent_pb.ActionOption(action_id=o.action_id, label=o.label, target_id=o.target_id,
                                         parameters_schema=json.dumps(o.parameters) if o.parameters else "")
                   for o in decision.options]
        reply.with_parameters = {o.action_id: sorted(dict(o.parameters.get("properties") or {}))
                                 for o in decision.options if o.parameters}
        request = agent_pb.RunRequest(**base, actor_id=decision.actor,
                                      decision=agent_pb.DecisionInput(situation=decision.situation, options=options))
        await run_one(client, request, reply)
        judge(reply, scene, fixed)
        replies.append(_progress(reply))
    await client.close_session(session)
    return replies


def _progress(reply: Reply) -> Reply:
    given = "".join(f" {k}={v}" for k, v in sorted(reply.parameters.items()))
    chosen = f" -> {reply.action_id or '(none)'}{given} (sensible {reply.sensible})" if reply.kind == "decision" else ""
    text = reply.text.replace("\n", "⏎")
    print(f"[{reply.scene} {reply.kind}{chosen}] {reply.total_ms:.0f} ms: {text[:160]!r} -- {verdict(reply)}",
          file=sys.stderr, flush=True)
    return reply


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scenes", type=Path, default=ROOT / "scenes", help="folder of scene files (*.json)")
    parser.add_argument("--config", help="sidecar config TOML, passed to the sidecar (evaluate another model)")
    parser.add_argument("--profile", default="", help="model profile for every run (default: the sidecar's)")
    parser.add_argument("--limit", type=int, default=0, help="events narrated per scene (0 = all)")
    parser.add_argument("--alias-mode", choices=sorted(ALIAS_MODE), default="display",
                        help="display: the model reads display names (as the demo); handle: npc_1, loc_2...")
    parser.add_argument("--verbatim", type=int, default=12, help="narrations printed verbatim, good and bad")
    parser.add_argument("--json", type=Path, help="write every reply and the figures here")
    parser.add_argument("--record", type=Path, help="keep the recorded model calls here (GAME_SIDECAR_RECORD_RUNS)")
    parser.add_argument("--no-replay", action="store_true",
                        help="skip the replay of every recorded call (replay_identical_ratio)")
    parser.add_argument("--markdown", action="store_true", help="also print a block for docs/benchmarks.md")
    parser.add_argument("--rejudge", type=Path, metavar="JSON",
                        help="no sidecar: judge the replies of an earlier --json file again with today's checks")
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scenes = load_scenes(args.scenes)
    if not scenes:
        print(f"bench_voice: no scene files in {args.scenes}", file=sys.stderr)
        return 2
    fixed = fixed_texts()
    started = time.perf_counter()
    replies: list[Reply] = []
    replayed: tuple[int, int] | None = None
    if args.rejudge:
        earlier = json.loads(args.rejudge.read_text(encoding="utf-8"))
        by_id = {s.id: s for s in scenes}
        replies = [Reply(**r) for r in earlier["replies"] if r["scene"] in by_id]
        for reply in replies:
            judge(reply, by_id[reply.scene], fixed)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            # Every model call, for the replay below (and scripts/bench/bench_choices.py with --record).
            record = str(args.record) if args.record else os.path.join(tmp, "runs.jsonl")
            if args.record:
                args.record.unlink(missing_ok=True)
            env = {**os.environ, replay_log.ENV: record}
            launch = ["--config", args.config] if args.config else []
            async with await SidecarProcess.launch(launch, env=env, timeout=60.0) as p:
                for scene in scenes:
                    replies += await bench_scene(p.client, scene, args, fixed)
            if not args.no_replay:  # each call again, with its seed, in this process: the texts must match
                counts: list[int] = []
                await replay(record, config=args.config, out=io.StringIO(), counts=counts)
                replayed = (counts[0], counts[1]) if counts else None
    summary = summarize(replies, {s.id: sum(r.scene == s.id for r in replies) for s in scenes}, replayed)
    summary["wall_s"] = earlier["summary"].get("wall_s") if args.rejudge else round(time.perf_counter() - started, 1)
    summary["alias_mode"] = args.alias_mode
    sample = pick_verbatim(replies, args.verbatim)
    for i, reply in enumerate(sample, 1):
        print(f"\n{i}. [{reply.scene}] {reply.input}\n   {reply.text!r}\n   ({verdict(reply)})")
    print("\n" + table(summary))
    if args.markdown:
        command = "scripts/bench/bench_voice.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        print("\n" + markdown(summary, sample, command.strip()))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "replies": [asdict(r) for r in replies]},
                                        ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
