#!/usr/bin/env python3
"""Context engine figures (issue 5), printed as one JSON object.

    .venv/bin/python scripts/bench_context.py [--turns 20] [--sessions 300]

- prompt_build_ms_p50: building a prompt (4,000-token budget, 10,000-entity
  session) for each turn of a dialogue, nothing cached but token counts of texts
  seen before and the scene of this revision (fastest of 3 builds per turn, each
  with a new input, the machine being shared); prompt_build_cpu_ms_p50: the same
  builds' CPU time (thread_time), which waiting for a core on a loaded machine does not inflate;
  prompt_build_ms_p50_cached: the same request again (nothing relevant changed).
- prefix_reuse_ratio: tokens of each prompt equal to the previous turn's prompt
  prefix, over the prompt's tokens, averaged over a 20-turn dialogue (same mood).
- tokens_vs_full_dump_ratio: our prompt's tokens over those of the whole session
  state dumped as JSON (the baseline), same scene; required facts checked present.
- over_budget_prompts: prompts over budget among generated sessions (tiny to large budgets).
- apply_ms_p50_growth, run_ms_p50_growth, preview_ms_p50_growth, rss_mb_growth: the
  long-session soak (scripts/context_soak.py; `--soak-turns`, `--soak-only`): one
  session of 3,000 dialogue turns with one world event every third turn, through
  the real sidecar process (scripted model, --state-dir); p50 of the 100 turns up
  to turn 3,000 over those up to turn 500, and RSS MB added from turn 500 to 3,000.

Token counts use cl100k_base through tiktoken (the gateway's fallback tokenizer).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec  # noqa: E402

from sidecar.config import Config  # noqa: E402
from sidecar.context import ContextEngine  # noqa: E402
from sidecar.context.contract import DialogueInput, RunSpec  # noqa: E402
from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING  # noqa: E402
from sidecar.errors import ContextWindowExceeded  # noqa: E402
from sidecar.state.model import (  # noqa: E402
    Entity,
    Event,
    Field,
    LoreCard,
    Memory,
    Pad,
    PersonaBinding,
    PersonaTemplate,
    Relation,
    Session,
    Story,
    TranscriptEntry,
)

WORDS = (
    "dragon seal king river forest blade gold silver tower ghost wolf storm harbour merchant oath crown "
    "shadow ember frost lantern caravan silk spice road bridge mill tavern guard priest temple"
).split()
NPC, PLAYER, TAVERN = "BP_Merchant_C_0000000001", "PLAYER_0000000001", "LOC_Tavern_0000000001"


def counter():
    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    return lambda text: len(enc.encode(text, disallowed_special=()))


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def big_session(seed: int = 7, entities: int = 10_000) -> Session:
    rng = random.Random(seed)
    s = Session(id="bench")
    w = s.world
    locations = [TAVERN] + [f"LOC_Area_{i:010d}" for i in range(1, 200)]
    for i, lid in enumerate(locations):
        w.entities[lid] = Entity(
            id=lid,
            kind="location",
            name="The Rusty Anchor" if i == 0 else f"Area {i}",
            description=text(rng, 25),
            fields={"ambiance": Field(text(rng, 6))},
        )
    w.entities[NPC] = Entity(
        id=NPC,
        kind="character",
        name="Maerwyn",
        description="A nomad merchant of fifty.",
        location_id=TAVERN,
        fields={"hp": Field(30), "max_hp": Field(30), "role": Field("merchant")},
    )
    w.entities[PLAYER] = Entity(
        id=PLAYER,
        kind="player",
        name="Aria",
        description="A young sellsword.",
        location_id=TAVERN,
        fields={"hp": Field(14), "max_hp": Field(20)},
    )
    n = entities - len(w.entities)
    for i in range(n):
        eid = f"BP_Thing_C_{i:010d}"
        # About a dozen things share the tavern; the rest are elsewhere.
        loc = TAVERN if i % 800 == 0 else rng.choice(locations[1:])
        w.entities[eid] = Entity(
            id=eid,
            kind=rng.choice(["character", "item", "item"]),
            name=text(rng, 2)[:-1],
            description=text(rng, rng.randint(5, 40)),
            location_id=loc,
            fields={"weight": Field(rng.randint(1, 50))},
        )
    ids = list(w.entities)
    for _ in range(256):
        w.events.append(Event(text=f"{rng.choice(ids)} {text(rng, 8)}", location_id=rng.choice(locations[:3])))
    for _ in range(2000):
        w.relations.append(Relation(source_id=rng.choice(ids), target_id=rng.choice(ids), kind="knows"))
    w.relations.append(Relation(source_id=NPC, target_id=PLAYER, kind="distrusts", strength=-0.4))
    for i in range(2000):
        cid = f"LORE_{i:06d}"
        w.lore[cid] = LoreCard(
            id=cid, title=text(rng, 2)[:-1], text=text(rng, rng.randint(20, 120)), triggers=[f"{rng.choice(WORDS)}{i}"]
        )
    for trig in ("dragon", "seal", "caravan"):
        w.lore[f"LORE_{trig}"] = LoreCard(id=f"LORE_{trig}", title=trig.title(), text=text(rng, 80), triggers=[trig])
    for i in range(4000):
        w.memories.append(Memory(actor_id=NPC if i % 20 == 0 else rng.choice(ids), text=text(rng, 12), revision=i))
    w.moods[NPC] = Pad(0.5, -0.3, 0.2)  # calm
    w.scene.update({"time_of_day": "dusk", "weather": "rain"})
    w.story = Story(
        plot_essentials=text(rng, 120),
        story_summary=text(rng, 200),
        author_note=text(rng, 30),
        instructions="Keep a grounded, low-fantasy tone.",
    )
    w.personas[NPC] = PersonaBinding(
        actor_id=NPC,
        inline=PersonaTemplate(
            identity="You are {npcName}, a {role} in {location}. " + text(rng, 120),
            inviolable_rules=["Never reveal the king's secret.", "Never break the fourth wall.", text(rng, 15)],
            mood_modifiers={"calm": "You are calm and speak slowly, without ceasing to be {npcName}."},
            reminder="You are still {npcName}, whatever your mood.",
        ),
    )
    s.revision = 1
    return s


def serialize(messages: list[dict[str, str]]) -> str:
    return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)


def prompt_tokens(messages, count) -> int:
    return sum(count(m["content"]) for m in messages) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING


def dialogue_figures(turns: int, count, prior_turns: int = 0) -> dict:
    session = big_session()
    engine = ContextEngine(Config())
    rng0 = random.Random(5)
    log = session.transcripts.setdefault(NPC, [])
    for i in range(prior_turns):  # an NPC the player has talked to before
        log.append(
            TranscriptEntry(
                role="player", text=f"Earlier question {i} about the {rng0.choice(WORDS)}?", speaker_id=PLAYER
            )
        )
        log.append(TranscriptEntry(role="actor", text=text(rng0, rng0.randint(15, 40)), speaker_id=NPC))
    t0 = time.perf_counter()
    first = engine.prepare(
        session, RunSpec("bench", NPC, DialogueInput("Good evening.")), count_tokens=count, budget_tokens=4000
    )
    cold_ms = (time.perf_counter() - t0) * 1000
    first.record("Evening, traveller.", interrupted=False, run_id="warm")
    rng = random.Random(3)
    build_ms, build_cpu_ms, cached_ms, ratios, over = [], [], [], [], 0
    previous = None
    for turn in range(turns):
        line = f"Tell me about the {rng.choice(WORDS)} and the {rng.choice(WORDS)}, turn {turn}?"
        spec = RunSpec("bench", NPC, DialogueInput(line))
        # The fastest of 3 builds of this turn (preview builds of the line with a different
        # ending each, so each counts a new volatile block): the machine is shared, and the
        # minimum is the build's own cost.
        reps, cpu = [], []
        for r in range(3):
            variant = RunSpec("bench", NPC, DialogueInput(f"{line} ({r})"))
            c0, t0 = time.thread_time(), time.perf_counter()
            engine.prepare(session, variant, count_tokens=count, budget_tokens=4000, preview=True)
            reps.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
        build_ms.append(min(reps))
        build_cpu_ms.append(min(cpu))
        prepared = engine.prepare(session, spec, count_tokens=count, budget_tokens=4000)
        for _ in range(20):
            t0 = time.perf_counter()
            engine.prepare(session, spec, count_tokens=count, budget_tokens=4000)
            cached_ms.append((time.perf_counter() - t0) * 1000)
        msgs = prepared.prompt.messages
        total = prompt_tokens(msgs, count)
        over += total > 4000
        if previous is not None:
            a, b = serialize(previous), serialize(msgs)
            n = 0
            limit = min(len(a), len(b))
            while n < limit and a[n] == b[n]:
                n += 1
            ratios.append(count(b[:n]) / count(b))
        previous = msgs
        prepared.record(
            f"Ah, the {rng.choice(WORDS)}. {text(rng, rng.randint(15, 40))}", interrupted=False, run_id=f"t{turn}"
        )
    # The first prompt after a delta (a new revision re-indexes what changed).
    after_delta = []
    for i in range(10):
        session.world.entities[PLAYER].fields["hp"] = Field(10 + i)
        session.revision += 1
        t0 = time.perf_counter()
        engine.prepare(
            session, RunSpec("bench", NPC, DialogueInput(f"And now {i}?")), count_tokens=count, budget_tokens=4000
        )
        after_delta.append((time.perf_counter() - t0) * 1000)
    # Baseline: the whole session state as JSON, same scene and input.
    dump = msgspec.json.encode(session.world).decode() + "\n" + line
    dump_tokens = count(dump)
    text_all = "\n".join(m["content"] for m in previous)
    facts = all(
        f in text_all for f in ("Maerwyn", "The Rusty Anchor", "player_1 (Aria)", "turn 19" if turns >= 20 else "")
    )
    leaked = [eid for eid in (NPC, PLAYER, TAVERN) if eid in text_all]
    return {
        "prompt_build_ms_p50": round(statistics.median(build_ms), 3),
        "prompt_build_ms_p90": round(sorted(build_ms)[int(len(build_ms) * 0.9) - 1], 3),
        "prompt_build_cpu_ms_p50": round(statistics.median(build_cpu_ms), 3),
        "prompt_build_ms_cold": round(cold_ms, 3),
        "prompt_build_ms_p50_after_delta": round(statistics.median(after_delta), 3),
        "prompt_build_ms_p50_cached": round(statistics.median(cached_ms), 4),
        "prefix_reuse_ratio": round(statistics.mean(ratios), 4),
        "prefix_reuse_ratio_min": round(min(ratios), 4),
        "prompt_tokens_last_turn": prompt_tokens(previous, count),
        "full_dump_tokens": dump_tokens,
        "tokens_vs_full_dump_ratio": round(prompt_tokens(previous, count) / dump_tokens, 5),
        "required_facts_present": facts,
        "engine_ids_in_prompt": len(leaked),
        "dialogue_over_budget": over,
        "entities": len(session.world.entities),
    }


def over_budget_figures(sessions: int, count) -> dict:
    rng = random.Random(11)
    engine = ContextEngine(Config())
    over = refused = built = 0
    for i in range(sessions):
        s = Session(id=f"gen{i}")
        w = s.world
        w.entities[TAVERN] = Entity(id=TAVERN, kind="location", name="Hall", description=text(rng, 20))
        w.entities[NPC] = Entity(id=NPC, kind="character", name="Actor", location_id=TAVERN)
        for j in range(rng.randint(0, 300)):
            eid = f"BP_Thing_C_{j:08d}"
            w.entities[eid] = Entity(
                id=eid, kind="item", name=text(rng, 2), description=text(rng, rng.randint(0, 80)), location_id=TAVERN
            )
        for j in range(rng.randint(0, 60)):
            w.lore[f"L{j:05d}"] = LoreCard(
                id=f"L{j:05d}", text=text(rng, rng.randint(1, 1500)), triggers=[rng.choice(WORDS)]
            )
        for _ in range(rng.randint(0, 300)):
            w.memories.append(Memory(actor_id=NPC, text=text(rng, rng.randint(1, 60))))
        big = rng.randint(0, 4000)
        w.story = Story(
            author_note=text(rng, rng.randint(0, big)),
            plot_essentials=text(rng, rng.randint(0, big)),
            story_summary=text(rng, rng.randint(0, big)),
            instructions=text(rng, rng.randint(0, big)),
        )
        log = s.transcripts.setdefault(NPC, [])
        for j in range(rng.randint(0, 200)):
            log.append(TranscriptEntry(role="player" if j % 2 == 0 else "actor", text=text(rng, rng.randint(1, 90))))
        budget = rng.choice([rng.randint(60, 600), rng.randint(600, 4000), rng.randint(4000, 32000)])
        spec = RunSpec(s.id, NPC, DialogueInput(text(rng, rng.randint(1, 80))))
        try:
            p = engine.prepare(s, spec, count_tokens=count, budget_tokens=budget)
        except ContextWindowExceeded:
            refused += 1
            continue
        built += 1
        over += prompt_tokens(p.prompt.messages, count) > budget
    return {"over_budget_prompts": over, "generated_sessions": sessions, "refused_fixed_part_too_big": refused}


SOAK_TARGETS = {"apply_ms_p50_growth": "<= 1.5", "run_ms_p50_growth": "<= 1.5", "rss_mb_growth": "<= 30"}


def soak_figures(turns: int) -> dict:
    """The long-session soak (scripts/context_soak.py): the real sidecar process, a --state-dir."""
    from context_soak import run_soak  # noqa: PLC0415 - launches a process; only when asked

    out = run_soak(turns)
    out["soak_targets"] = SOAK_TARGETS
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--soak-turns", type=int, default=3000, help="long-session soak turns (0: no soak)")
    parser.add_argument("--soak-only", action="store_true", help="run only the long-session soak")
    args = parser.parse_args()
    if args.soak_only:
        print(json.dumps(soak_figures(args.soak_turns)))
        return
    count = counter()
    out = {"budget_tokens": 4000, **dialogue_figures(args.turns, count)}
    continuing = dialogue_figures(args.turns, count, prior_turns=30)
    out["prefix_reuse_ratio_continuing"] = continuing["prefix_reuse_ratio"]
    out["prefix_reuse_ratio_continuing_min"] = continuing["prefix_reuse_ratio_min"]
    out["prompt_build_ms_p50_continuing"] = continuing["prompt_build_ms_p50"]
    out["prompt_build_cpu_ms_p50_continuing"] = continuing["prompt_build_cpu_ms_p50"]
    # A long session: the build should cost what the prompt holds, not the whole transcript.
    for prior in (300, 1000):
        long = dialogue_figures(args.turns, count, prior_turns=prior)
        out[f"prompt_build_ms_p50_after_{prior}_exchanges"] = long["prompt_build_ms_p50"]
        out[f"prompt_build_cpu_ms_p50_after_{prior}_exchanges"] = long["prompt_build_cpu_ms_p50"]
    out.update(over_budget_figures(args.sessions, count))
    if args.soak_turns:
        out.update(soak_figures(args.soak_turns))
    out["targets"] = {
        "prompt_build_ms_p50": "<= 1",
        "prompt_build_ms_p50_cached": "<= 0.1",
        "prefix_reuse_ratio": ">= 0.9",
        "tokens_vs_full_dump_ratio": "<= 0.1",
        "over_budget_prompts": "= 0",
        **SOAK_TARGETS,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
