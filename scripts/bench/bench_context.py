#!/usr/bin/env python3
"""Context engine figures (issue 5), printed as one JSON object.

    .venv/bin/python scripts/bench/bench_context.py [--turns 20] [--sessions 300]

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
  long-session soak (scripts/bench/context_soak.py; `--soak-turns`, `--soak-only`): one
  session of 3,000 dialogue turns with one world event every third turn, through
  the real sidecar process (scripted model, --state-dir); p50 of the 100 turns up
  to turn 3,000 over those up to turn 500, and RSS MB added from turn 500 to 3,000.

Issue 23 (`issue23_figures`, the audit's scene: 15 characters, 50 events, long story texts):
- scene_kept_ratio: the scene's parts kept (location, each character present, the
  conditions, the actor's and the player's state, the last event) over those present, per
  budget (500, 800, 1200, 3000, 20000); scene_fits: whether the budget holds the fixed
  part, the scene and the last event.
- budget_fill_min: the lowest prompt tokens / budget among first prompts (1000 to 4000)
  where something relevant (history, memory, lore) was cut; budget_fill_min_dialogue: the
  same over a 20-turn dialogue at 1500 (a window that moves refills to 60% of its share).
- memory_recall_ratio: matching memories shown over those that fit the memory share
  (12 matching, in a continuing dialogue).
- import_prompt_equal: PreviewPrompt-equivalent builds of a session and of its
  export imported, after dialogue and narration runs, events, lore and memories.
- prefix_reuse_ratio_narration: prefix reuse over 12 narrations of tavern events, every
  third naming someone elsewhere.

Issue 31 (`long_scenes`, `--scenes-only`, `--scenes-turns`): two long scenes of our own
through the real sidecar (scripts/bench/long_scenes.py): prefix reuse before and after the events
cap, the history's fill of its share at every budget, player lines without their reply, RSS
from turn 300 to the end.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import msgspec  # noqa: E402

from sidecar.config import Config  # noqa: E402
from sidecar.context import ContextEngine  # noqa: E402
from sidecar.context.contract import DialogueInput, NarrateInput, RunSpec  # noqa: E402
from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING  # noqa: E402
from sidecar.errors import ContextWindowExceeded  # noqa: E402
from sidecar.state import codec  # noqa: E402
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


CAPTAIN = "BP_Hollis_C_0000000012"


def audit_session() -> Session:
    """The audit's scene: the bench tavern with 15 characters, 50 events (the oldest
    about the watch captain), long story texts, no other world."""
    rng = random.Random(23)
    s = Session(id="audit")
    w = s.world
    w.entities[TAVERN] = Entity(id=TAVERN, kind="location", name="The Rusty Anchor", description=text(rng, 20))
    w.entities[NPC] = Entity(
        id=NPC, kind="character", name="Maerwyn", description="A nomad merchant of fifty.", location_id=TAVERN,
        fields={"hp": Field(30), "max_hp": Field(30)},
    )  # fmt: skip
    w.entities[PLAYER] = Entity(
        id=PLAYER, kind="player", name="Aria", description="A young sellsword.", location_id=TAVERN,
        fields={"hp": Field(14), "max_hp": Field(20)},
    )  # fmt: skip
    w.entities[CAPTAIN] = Entity(
        id=CAPTAIN, kind="character", name="Captain Hollis", description="Captain of the watch.", location_id=TAVERN
    )
    for i in range(12):
        eid = f"BP_Patron_C_{i:010d}"
        w.entities[eid] = Entity(id=eid, kind="character", name=f"Patron {i}", description=text(rng, 8),
                                 location_id=TAVERN)  # fmt: skip
    w.entities["BP_Sword_C_0000000001"] = Entity(
        id="BP_Sword_C_0000000001", kind="item", name="iron sword", location_id=PLAYER
    )
    for i in range(16):
        w.events.append(Event(text=f"{CAPTAIN} {text(rng, 8)}", actor_id=CAPTAIN, location_id=TAVERN, revision=1 + i))
    for i in range(33):
        who = f"BP_Patron_C_{i % 12:010d}"
        w.events.append(Event(text=f"{who} {text(rng, 10)}", location_id=TAVERN, revision=17 + i))
    w.events.append(Event(text="Thunder rolls over Veldria.", revision=50))
    w.scene.update({"time_of_day": "dusk", "weather": "rain"})
    w.story = Story(plot_essentials=text(rng, 150), story_summary=text(rng, 300), author_note=text(rng, 20))
    for i in range(12):
        w.memories.append(Memory(actor_id=NPC, text=f"The watch captain {text(rng, 8)}", revision=2 + i))
    s.revision = 50
    return s


def _scene_parts(session: Session, msgs: list[dict[str, str]]) -> tuple[int, int]:
    """(kept, present) of the scene's parts in a prompt."""
    blob = "\n".join(m["content"] for m in msgs)
    aliases = session.aliases.by_id
    wanted = ["Location: " + aliases[TAVERN], "Conditions: ", f"You are {aliases[NPC]} [",
              f"Player: {aliases[PLAYER]} [", "Thunder rolls over Veldria."]  # fmt: skip
    present = [e for e in session.world.entities.values() if e.kind == "character" and e.id != NPC]
    wanted += [f"Present: {aliases[e.id]} " for e in present]
    return sum(w in blob for w in wanted), len(wanted)


def issue23_figures(count) -> dict:
    out: dict = {}
    question = RunSpec("audit", NPC, DialogueInput("What do you know of the watch captain?"))
    ratios, fits = {}, {}
    whole = ContextEngine(Config()).prepare(audit_session(), question, count_tokens=count, budget_tokens=20000)
    need = sum(x.tokens for x in whole.prompt.sections if x.tier == "volatile" or x.name in (
        "system_rules", "identity", "inviolable", "setting"))  # fmt: skip
    # With the last event, the request's overhead (3 messages) and the separators.
    need += count("Event: Thunder rolls over Veldria.") + 3 * MESSAGE_OVERHEAD + REPLY_PRIMING + 12
    for budget in (500, 800, 1200, 3000, 20000):
        session = audit_session()
        p = ContextEngine(Config()).prepare(session, question, count_tokens=count, budget_tokens=budget)
        kept, present = _scene_parts(session, p.prompt.messages)
        ratios[str(budget)] = round(kept / present, 3)
        fits[str(budget)] = need <= budget
    out["scene_kept_ratio"] = ratios
    out["scene_fits"] = fits
    fills = []
    for budget in (1000, 1500, 2000, 3000, 4000):
        p = ContextEngine(Config()).prepare(audit_session(), question, count_tokens=count, budget_tokens=budget)
        if any(x.section in ("history", "memory", "lore") for x in p.prompt.left_out):
            fills.append(prompt_tokens(p.prompt.messages, count) / budget)
    out["budget_fill_min"] = round(min(fills), 3) if fills else None
    session, engine, rng, fills = audit_session(), ContextEngine(Config()), random.Random(8), []
    for turn in range(20):
        spec = RunSpec("audit", NPC, DialogueInput(f"And the {rng.choice(WORDS)}, {turn}?"))
        p = engine.prepare(session, spec, count_tokens=count, budget_tokens=1500)
        if any(x.section in ("history", "memory", "lore") for x in p.prompt.left_out):
            fills.append(prompt_tokens(p.prompt.messages, count) / 1500)
        p.record(text(rng, rng.randint(10, 30)), interrupted=False, run_id=str(turn))
    out["budget_fill_min_dialogue"] = round(min(fills), 3) if fills else None
    # Memories: a continuing dialogue, then a question 12 memories match (all fit the share).
    session, engine = audit_session(), ContextEngine(Config())
    for turn, line in enumerate(["Evening.", "Busy night?"]):
        p = engine.prepare(session, RunSpec("audit", NPC, DialogueInput(line)), count_tokens=count, budget_tokens=4000)
        p.record("Aye.", interrupted=False, run_id=str(turn))
    p = engine.prepare(session, question, count_tokens=count, budget_tokens=4000)
    blob = "\n".join(m["content"] for m in p.prompt.messages)
    shown = sum(f"- {m.text}" in blob for m in session.world.memories)
    out["memory_recall_ratio"] = round(shown / len(session.world.memories), 3)
    # A save: dialogue and narration runs, events, lore and memories; then export -> import.
    session, engine = audit_session(), ContextEngine(Config())
    session.world.lore["LORE_watch"] = LoreCard(id="LORE_watch", title="Watch", text=text(rng, 40), triggers=["watch"])
    for turn in range(6):
        line = RunSpec("audit", NPC, DialogueInput(f"The watch and the {rng.choice(WORDS)}, {turn}?"))
        engine.prepare(session, line, count_tokens=count, budget_tokens=1500).record(
            text(rng, 15), interrupted=False, run_id=f"d{turn}"
        )
        session.world.events.append(Event(text=f"A patron leaves, {turn}.", location_id=TAVERN))
        session.revision += 1
        session.world.events[-1].revision = session.revision
        narr = RunSpec("audit", "", NarrateInput(f"A patron leaves, {turn}.", (PLAYER,)))
        engine.prepare(session, narr, count_tokens=count, budget_tokens=1500).record(
            text(rng, 15), interrupted=False, run_id=f"n{turn}"
        )
    copy = codec.import_blob(codec.export_blob(session))
    equal = True
    for spec in (question, RunSpec("audit", "", NarrateInput("Rain.", (PLAYER,)))):
        a = engine.prepare(session, spec, count_tokens=count, budget_tokens=1500, preview=True).prompt
        b = ContextEngine(Config()).prepare(copy, spec, count_tokens=count, budget_tokens=1500, preview=True).prompt
        equal = equal and a.messages == b.messages and a.left_out == b.left_out
    out["import_prompt_equal"] = equal
    out.update(narration_reuse(count))
    return out


def narration_reuse(count) -> dict:
    """Prefix reuse over narrations in the big session's tavern, every third naming
    someone elsewhere (the scene follows where the event happens)."""
    session, engine = big_session(), ContextEngine(Config())
    far = next(e.id for e in session.world.entities.values() if e.kind == "character" and e.location_id != TAVERN)
    rng, previous, ratios, leaked = random.Random(12), None, [], 0
    for turn in range(12):
        about = (PLAYER, far) if turn % 3 == 2 else (PLAYER,)
        line = f"{text(rng, 8)} ({turn})"
        session.revision += 1
        event = Event(text=line, location_id=TAVERN, entity_ids=list(about), revision=session.revision)
        session.world.events.append(event)
        p = engine.prepare(session, RunSpec("bench", "", NarrateInput(line, about)), count_tokens=count,
                           budget_tokens=4000)  # fmt: skip
        msgs = p.prompt.messages
        leaked += any(eid in m["content"] for m in msgs for eid in (NPC, PLAYER, TAVERN, far))
        if previous is not None:
            a, b = serialize(previous), serialize(msgs)
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            ratios.append(count(b[:n]) / count(b))
        previous = msgs
        p.record(text(rng, rng.randint(20, 40)), interrupted=False, run_id=f"n{turn}")
    return {
        "prefix_reuse_ratio_narration": round(statistics.mean(ratios), 4),
        "prefix_reuse_ratio_narration_min": round(min(ratios), 4),
        "engine_ids_in_narration": leaked,
    }


SOAK_TARGETS = {"apply_ms_p50_growth": "<= 1.5", "run_ms_p50_growth": "<= 1.5", "rss_mb_growth": "<= 30"}
SCENES_TARGETS = {
    "share_fill_min": ">= 0.9",
    "prefix_reuse_after_cap": ">= 0.85",
    "player_lines_without_reply": "= 0",
    "rss_mb_growth_300_to_end": "<= 15",
}


def soak_figures(turns: int) -> dict:
    """The long-session soak (scripts/bench/context_soak.py): the real sidecar process, a --state-dir."""
    from context_soak import run_soak  # noqa: PLC0415 - launches a process; only when asked

    out = run_soak(turns)
    out["soak_targets"] = SOAK_TARGETS
    return out


def scenes_figures(turns: int, count) -> dict:
    """Two long scenes of our own through the real sidecar (scripts/bench/long_scenes.py)."""
    from long_scenes import run_scenes  # noqa: PLC0415 - launches a process; only when asked

    return {"long_scenes": run_scenes(turns, count), "long_scenes_targets": SCENES_TARGETS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--soak-turns", type=int, default=3000, help="long-session soak turns (0: no soak)")
    parser.add_argument("--soak-only", action="store_true", help="run only the long-session soak")
    parser.add_argument("--scenes-turns", type=int, default=3000, help="turns of each long scene (0: none)")
    parser.add_argument("--scenes-only", action="store_true", help="run only the two long scenes")
    args = parser.parse_args()
    if args.soak_only:
        print(json.dumps(soak_figures(args.soak_turns)))
        return
    if args.scenes_only:
        print(json.dumps(scenes_figures(args.scenes_turns, counter())))
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
    out.update(issue23_figures(count))
    if args.soak_turns:
        out.update(soak_figures(args.soak_turns))
    if args.scenes_turns:
        out.update(scenes_figures(args.scenes_turns, count))
    out["targets"] = {
        "scene_kept_ratio": "1.0 where scene_fits",
        "budget_fill_min": ">= 0.9",
        "memory_recall_ratio": "1.0",
        "import_prompt_equal": "true",
        "prefix_reuse_ratio_narration": ">= 0.9",
        "prompt_build_ms_p50": "<= 1",
        "prompt_build_ms_p50_cached": "<= 0.1",
        "prefix_reuse_ratio": ">= 0.9",
        "tokens_vs_full_dump_ratio": "<= 0.1",
        "over_budget_prompts": "= 0",
        **SOAK_TARGETS,
        **SCENES_TARGETS,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
