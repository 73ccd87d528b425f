"""Two long scenes played through the real sidecar process, for scripts/bench/bench_context.py
(issue 31, item 2): does each actor's history fill its share, hold still past the
session's events cap, keep each player line with its reply, and does memory stay flat?

- "harbour": 31 entities over four nested places (city > harbour > tavern > back room,
  and a market), three NPCs (budgets 1,500 / 3,000 / 8,000) and the narrator (3,000), two
  world events a turn at random places naming random entities (a third of them by engine
  ID in the text), a dockhand who moves every 20th turn.
- "mine": 44 entities down a deep chain (mountain > mine > four levels > a flooded
  gallery), two NPCs (2,000 / 5,000) and the narrator (2,000), one long event every turn
  and a burst of five every 25th.

Each turn: ApplyDeltas (the events, a move), then for one actor a PreviewPrompt and a Run
of the same request (the scripted model; the preview is the prompt the run sends, docs/
context.md). Per actor, consecutive prompts give the prefix reuse (tokens of the shared
prefix over the later prompt's, cl100k_base), before the events cap and from 20 turns
after it; each pair is also classed (the history extends, the window moved, the setting
changed: someone came or went). Every prompt, and every 50th turn a PreviewPrompt of each
actor at each of SWEEP's budgets, gives the history's fill of its own share (history
tokens over HISTORY_SHARE of what the fixed, required and volatile parts leave) where
world events that remain perceivable were left out. RSS of the sidecar process at turn
300 and at the end.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_soak import _CONFIG, _entity, _rss_mb

from sidecar.client import SidecarProcess
from sidecar.context.budget import HISTORY_SHARE
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import state_pb2 as spb
from sidecar.v1 import types_pb2 as tpb

#: The budgets every actor's history fill is also read at (PreviewPrompt, every 50th turn).
SWEEP = (1000, 1500, 3000, 5000, 8000)
DYNAMIC = frozenset({"history", "lore", "lore_new", "memory", "memory_recall"})
LOC, CHAR, PLAYER_KIND, ITEM = (
    tpb.ENTITY_KIND_LOCATION, tpb.ENTITY_KIND_CHARACTER, tpb.ENTITY_KIND_PLAYER, tpb.ENTITY_KIND_ITEM,
)  # fmt: skip
WORDS = (
    "rope lantern tide crate salt gull anchor net barrel coin whisper rumour debt oath knife ale "
    "bread fish smoke sail mast storm lamp shadow ledger seal key door stair cellar"
).split()


@dataclass
class Scene:
    name: str
    #: (id, kind, name, location, description)
    entities: list[tuple[str, int, str, str, str]]
    player: str
    npcs: list[str]
    places: list[str]
    #: each actor's budget ("" is the narrator)
    budgets: dict[str, int]
    #: turn, rng -> the event texts and places of this turn
    events: Callable[[int, random.Random, Scene], list[tuple[str, str, list[str]]]]
    #: the actors a turn picks from ("" is the narrator)
    actors: list[str] = field(default_factory=list)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def harbour() -> Scene:
    places = [
        ("LOC_City_0001", "Port Averly", "", "A walled port city on a grey sea."),
        ("LOC_Harbour_0002", "The Harbour", "LOC_City_0001", "Quays, cranes and the smell of tar."),
        ("LOC_Tavern_0003", "The Drowned Bell", "LOC_Harbour_0002", "A low tavern with a bell over the bar."),
        ("LOC_BackRoom_0004", "The Back Room", "LOC_Tavern_0003", "Where cards are played for debts."),
        ("LOC_Market_0005", "Fish Market", "LOC_City_0001", "Stalls under canvas, gulls overhead."),
    ]
    ents = [(i, LOC, n, p, d) for i, n, p, d in places]
    ents += [
        ("BP_Npc_Hollis_01", CHAR, "Captain Hollis", "LOC_Tavern_0003", "The harbour watch captain, tired and honest."),
        ("BP_Npc_Marta_02", CHAR, "Marta", "LOC_Tavern_0003", "The tavern keeper, who hears everything."),
        ("BP_Npc_Quill_03", CHAR, "Quill", "LOC_BackRoom_0004", "A card sharp with ink-stained fingers."),
        ("PLAYER_0001", PLAYER_KIND, "Rook", "LOC_Tavern_0003", "A sellsword just off the boat."),
    ]
    for i in range(12):
        where = ["LOC_Harbour_0002", "LOC_Tavern_0003", "LOC_Market_0005", "LOC_BackRoom_0004"][i % 4]
        ents.append((f"BP_Extra_{i:02d}", CHAR, f"Dockhand {i}", where, "A dockhand who works the night shift."))
    for i in range(10):
        where = ["LOC_Tavern_0003", "LOC_Market_0005", "PLAYER_0001", "LOC_BackRoom_0004", "LOC_Harbour_0002"][i % 5]
        ents.append((f"BP_Item_{i:02d}", ITEM, f"{WORDS[i]} {WORDS[i + 10]}", where, ""))

    def events(turn: int, rng: random.Random, scene: Scene) -> list[tuple[str, str, list[str]]]:
        out = []
        for _ in range(2):
            place = rng.choice(scene.places)
            who = rng.choice([e[0] for e in scene.entities if e[1] in (CHAR, PLAYER_KIND)])
            if rng.random() < 1 / 3:
                out.append((f"{who} mutters about the {_words(rng, 3)} ({turn}).", place, []))
            else:
                out.append((f"Someone talks of the {_words(rng, 4)} ({turn}).", place, [who]))
        return out

    npcs = ["BP_Npc_Hollis_01", "BP_Npc_Marta_02", "BP_Npc_Quill_03"]
    budgets = dict(zip([*npcs, ""], [1500, 3000, 8000, 3000], strict=True))
    scene = Scene("harbour", ents, "PLAYER_0001", npcs, [p[0] for p in places], budgets, events)
    scene.actors = [*scene.npcs, ""]
    return scene


def mine() -> Scene:
    chain = [
        ("LOC_Mountain", "Greyfang Mountain", ""),
        ("LOC_Mine", "The Old Mine", "LOC_Mountain"),
        ("LOC_Level1", "First Level", "LOC_Mine"),
        ("LOC_Level2", "Second Level", "LOC_Level1"),
        ("LOC_Level3", "Third Level", "LOC_Level2"),
        ("LOC_Gallery", "Flooded Gallery", "LOC_Level3"),
    ]
    ents = [(i, LOC, n, p, f"{n}: dark, cold and dripping. " * 3) for i, n, p in chain]
    ents += [
        ("NPC_Foreman", CHAR, "Foreman Brask", "LOC_Level1", "Runs the crews; counts every lamp."),
        ("NPC_Scout", CHAR, "Ilsa", "LOC_Level3", "A scout who maps the lower galleries."),
        ("PC_Main", PLAYER_KIND, "Tamsin", "LOC_Level1", "A surveyor hired by the guild."),
    ]
    for i in range(30):
        ents.append((f"NPC_Miner_{i:02d}", CHAR, f"Miner {i}", chain[2 + i % 4][0], "Soot to the elbows."))
    for i in range(5):
        ents.append((f"ITEM_Cart_{i}", ITEM, f"ore cart {i}", chain[2 + i % 4][0], ""))

    def events(turn: int, rng: random.Random, scene: Scene) -> list[tuple[str, str, list[str]]]:
        n = 5 if turn % 25 == 0 else 1
        out = []
        for _ in range(n):
            place = rng.choice(scene.places[2:])
            who = rng.choice(scene.npcs + ["NPC_Miner_03", "NPC_Miner_07", scene.player])
            text = f"Deep in the shaft, {_words(rng, 12)}; the timbers groan and dust falls ({turn})."
            out.append((text, place, [who]))
        return out

    budgets = {"NPC_Foreman": 2000, "NPC_Scout": 5000, "": 2000}
    scene = Scene("mine", ents, "PC_Main", ["NPC_Foreman", "NPC_Scout"], [c[0] for c in chain], budgets, events)
    scene.actors = [*scene.npcs, ""]
    return scene


def _request(scene: Scene, sid: str, actor: str, turn: int, budget: int) -> apb.RunRequest:
    if not actor:
        return apb.RunRequest(session_id=sid, actor_id="", budget_tokens=budget, narrate=apb.NarrateInput(
            text=f"The narrator takes in the scene ({turn}).", entity_ids=[scene.player]))  # fmt: skip
    return apb.RunRequest(session_id=sid, actor_id=actor, budget_tokens=budget, dialogue=apb.DialogueInput(
        speaker_id=scene.player, text=f"Turn {turn}: what have you heard?"))  # fmt: skip


def _flat(messages: Any) -> str:
    return "".join(f"<{m.role}>{m.content}" for m in messages)


def _shared(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Actor:
    last: str = ""
    last_messages: list[tuple[str, str]] = field(default_factory=list)
    reuse: list[tuple[int, float]] = field(default_factory=list)
    #: the same, for pairs whose setting (the system message) did not change: the window's own doing
    steady: list[tuple[int, float]] = field(default_factory=list)
    #: consecutive pairs: "extends", "window_moved", "setting_changed"
    pairs: dict[str, int] = field(default_factory=dict)
    fills: list[float] = field(default_factory=list)
    lost_replies: int = 0


async def play(scene: Scene, turns: int, count: Callable[[str], int], seed: int = 31) -> dict[str, Any]:
    rng = random.Random(seed)
    sid = scene.name
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "scenes.toml"
        cfg.write_text(_CONFIG)
        sidecar = await SidecarProcess.launch(
            ["--config", str(cfg), "--state-dir", str(Path(tmp) / "state")], env=dict(os.environ), timeout=60
        )
        pid = sidecar.proc.pid
        actors = {a: _Actor() for a in scene.actors}
        cap_turn = 0
        rss: dict[str, float] = {}
        try:
            client = sidecar.client
            await client.open_session(sid)
            revision = (await client.apply_deltas(sid, 0, [_entity(*e) for e in scene.entities])).revision
            events = 0
            for turn in range(1, turns + 1):
                ops = [
                    spb.DeltaOp(record_event=spb.RecordEventOp(event=spb.GameEvent(
                        text=text, entity_ids=ids, location_id=place)))  # fmt: skip
                    for text, place, ids in scene.events(turn, rng, scene)
                ]
                if turn % 20 == 0:  # someone moves (never an actor: their place anchors the scene)
                    e = rng.choice([e for e in scene.entities if e[1] == CHAR and e[0] not in scene.npcs])
                    ops.append(_entity(e[0], e[1], e[2], rng.choice(scene.places[1:]), e[4]))
                revision = (await client.apply_deltas(sid, revision, ops)).revision
                events += len(ops)
                if not cap_turn and events > 256:
                    cap_turn = turn
                actor = scene.actors[turn % len(scene.actors)]
                request = _request(scene, sid, actor, turn, scene.budgets[actor])
                preview = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=request))
                _measure(actors[actor], preview, turn, count)
                if turn % 50 == 0:
                    for who in scene.actors:
                        for budget in SWEEP:
                            look = _request(scene, sid, who, turn, budget)
                            seen = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=look))
                            _fill(actors[who], seen)
                async for _ in client.run(request, timeout=120):
                    pass
                if turn % 300 == 0:
                    rss[str(turn)] = _rss_mb(pid)
            rss["end"] = _rss_mb(pid)
        finally:
            await sidecar.close()

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 3) if values else None

    def split(attr: str) -> tuple[list[float], list[float]]:
        pairs = [p for a in actors.values() for p in getattr(a, attr)]
        return [r for t, r in pairs if t < cap_turn], [r for t, r in pairs if t >= cap_turn + 20]

    before, after = split("reuse")
    steady_before, steady_after = split("steady")
    fills = [f for a in actors.values() for f in a.fills]
    return {
        "turns": turns,
        "cap_passed_at_turn": cap_turn,
        "prefix_reuse_before_cap": mean(before),
        "prefix_reuse_after_cap": mean(after),
        "prefix_reuse_before_cap_same_setting": mean(steady_before),
        "prefix_reuse_after_cap_same_setting": mean(steady_after),
        "prefix_reuse_by_actor_budget": {
            f"{actor or 'narrator'} @{scene.budgets[actor]}": [
                mean([r for t, r in a.reuse if t < cap_turn]),
                mean([r for t, r in a.reuse if t >= cap_turn + 20]),
            ]
            for actor, a in actors.items()
        },
        "share_fill_min": round(min(fills), 3) if fills else None,
        "share_fill_p10": round(statistics.quantiles(fills, n=10)[0], 3) if len(fills) > 10 else None,
        "share_fill_mean": mean(fills),
        "prompts_with_events_left_out": len(fills),
        "player_lines_without_reply": sum(a.lost_replies for a in actors.values()),
        "consecutive_prompts": {
            kind: sum(a.pairs.get(kind, 0) for a in actors.values())
            for kind in ("extends", "window_moved", "setting_changed")
        },
        "rss_mb_at_300": rss.get("300"),
        "rss_mb_at_end": rss.get("end"),
        "rss_mb_growth_300_to_end": round(rss["end"] - rss["300"], 1) if "300" in rss else None,
        "rss_mb_series": rss,
    }


def _measure(actor: _Actor, preview: Any, turn: int, count: Callable[[str], int]) -> None:
    """A run's prompt: reuse against the actor's previous one, what broke it, fill, lost replies."""
    text = _flat(preview.messages)
    messages = [(m.role, m.content) for m in preview.messages]
    if actor.last:
        shared = _shared(actor.last, text)
        actor.reuse.append((turn, count(text[:shared]) / max(1, count(text))))
        before = actor.last_messages
        if before[0] != messages[0]:
            kind = "setting_changed"
        elif messages[1 : len(before) - 1] == before[1:-1]:
            kind = "extends"
        else:
            kind = "window_moved"
        actor.pairs[kind] = actor.pairs.get(kind, 0) + 1
        if kind != "setting_changed":
            actor.steady.append(actor.reuse[-1])
    actor.last, actor.last_messages = text, messages
    _fill(actor, preview)
    history = messages[1:-1]
    for i, (role, content) in enumerate(history):
        if role == "user" and " says: " in content.split("\n", 1)[0] and not content.startswith("Event:"):
            if i + 1 >= len(history) or history[i + 1][0] != "assistant":
                actor.lost_replies += 1


def _fill(actor: _Actor, preview: Any) -> None:
    """History tokens over the history's own share, where perceivable world events were left out."""
    sent = {s.name: s.tokens for s in preview.sections}
    remaining = [
        o for o in preview.left_out if o.section == "history" and o.kind == "world_event" and "cap" not in o.reason
    ]
    if sum(o.count for o in remaining):
        # The budget the prompt was built to (a model's window may hold less than asked).
        dynamic = preview.budget_tokens - preview.prompt_tokens + sum(sent.get(n, 0) for n in DYNAMIC)
        actor.fills.append(sent.get("history", 0) / max(1, int(dynamic * HISTORY_SHARE)))


def run_scenes(turns: int, count: Callable[[str], int], only: str = "") -> dict[str, Any]:
    scenes = [s for s in (harbour(), mine()) if not only or s.name == only]
    return {scene.name: asyncio.run(play(scene, turns, count)) for scene in scenes}
