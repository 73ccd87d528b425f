"""Cost of privacy per prompt in a 10,000-entity session (issue 4 figures).

Prints one JSON object:

- projection_ms_p50 / _p95: one prompt's projection at a known revision: a
  Projection for an NPC, every entity it perceives with its projected fields,
  names and descriptions through `text`, the moment, one reverse mapping.
  Target: under 1 ms p50.
- baseline_scan_ms_p50: the same prompt found by scanning all entities with
  `can_see` (what the location index avoids), for comparison in the same run.
- guard_ms_p50: `check_outgoing` on a ~8 KB prompt against all engine IDs, a
  prompt it has not seen (each round's differs); `_nonascii` the same with a
  non-ASCII character in every line (an em dash, as scene lines hold: the slower
  folding path); `_seen` the same prompt again (texts the matcher knows hold no
  ID's text are a set lookup).
- first_prompt_after_revision_ms_p50: the first projection after a batch that
  moved one entity (index rebuild; the ID matcher is reused).
- first_prompt_after_new_entity_ms_p50: the same after a batch that added an
  entity (index rebuild and the matcher extended by one ID).
- matcher_build_ms: building the ID matcher for all IDs from nothing.
- dealias_us_per_chunk_p50: the streaming de-aliaser (aliases back to display
  names in text to the game) per model chunk, for a ~500-character reply naming
  10 perceived entities, fed a word per chunk (`_words`) or 3 characters per
  chunk (`_3chars`, every alias split); `_listed` also lists every perceived
  entity's name as an alias to match (display-name mode's cost).
- alias_table_ms_1000_names_cold / _warm: building the table a run's dealiasers
  share (AliasTable) over 1,000 display names, with the regex compiled anew (a
  session's first run with these names) or found in re's cache; a run builds it
  once, in its prompt's worker thread (it used to be built two or three times per
  run on the event loop).

Usage: .venv/bin/python scripts/bench/bench_projection.py [--entities 10000] [--rounds 400] [--per-room 20]
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sidecar.config import StateLimits  # noqa: E402
from sidecar.idsearch import IdMatcher, matcher_for  # noqa: E402
from sidecar.llm.guard import check_outgoing  # noqa: E402
from sidecar.projection import Projection  # noqa: E402
from sidecar.projection.dealias import AliasTable, Dealiaser  # noqa: E402
from sidecar.state import ops as o  # noqa: E402
from sidecar.state.apply import apply_ops  # noqa: E402
from sidecar.state.model import Entity, EntityRef, Field, Moment, Session, Visibility  # noqa: E402


def build(n: int, per_room: int = 20) -> tuple[Session, list[str]]:
    """n entities: 1 world, n/per_room rooms, the rest characters and items spread
    over the rooms, with fields, references, and descriptions that mention engine IDs."""
    s = Session(id="bench")
    s.options.coordinate_fields = ["position"]
    rooms = [f"/Game/Maps/Town/Room_{i:04d}.Room_{i:04d}" for i in range(max(1, n // per_room))]
    ops: list[o.Op] = [o.UpsertEntity(Entity(id="/Game/Maps/Town.Town", kind="location", name="Town"))]
    ops += [
        o.UpsertEntity(Entity(id=r, kind="location", name=f"Room {i}", location_id="/Game/Maps/Town.Town"))
        for i, r in enumerate(rooms)
    ]
    actors: list[str] = []
    for i in range(n - len(rooms) - 1):
        eid = f"BP_Goblin_C_{2_000_000_000 + i}" if i % 2 else str(uuid.UUID(int=i + 1))
        room = rooms[i % len(rooms)]
        other = actors[-1] if actors else room
        vis = Visibility("known_to", (other,)) if i % 17 == 0 else Visibility()
        ops.append(
            o.UpsertEntity(
                Entity(
                    id=eid,
                    kind="character" if i % 3 else "item",
                    name=f"Goblin {i}",
                    description=f"A goblin who owes {other} three coins.",
                    location_id=room,
                    visibility=vis,
                    fields={
                        "hp": Field(10 + i % 7),
                        "position": Field([float(i), 0.0, 1.0]),
                        "friend": Field(EntityRef(other)),
                        "secret": Field("buried gold", Visibility("hidden")),
                    },
                )
            )
        )
        actors.append(eid)
    apply_ops(s, ops, 1, StateLimits(max_entities=10**7))
    return s, actors


def prompt_for(p: Projection, moment: Moment) -> list[dict[str, str]]:
    lines = []
    for e in p.visible_entities():
        fields = ", ".join(f"{k}={v}" for k, v in p.fields(e).items())
        lines.append(f"{p.alias(e.id)}: {p.text(e.name)}. {p.text(e.description)} [{fields}]")
    return [
        {"role": "system", "content": "\n".join(lines)},
        {"role": "user", "content": p.moment_text(moment) + " What do you do?"},
    ]


def scan_baseline(p: Projection) -> int:
    return sum(1 for e in p.session.world.entities.values() if p.can_see(e))


def ms(samples: list[float], q: float) -> float:
    samples = sorted(samples)
    return round(samples[min(len(samples) - 1, int(q * len(samples)))] * 1000, 4)


def dealias_us(p: Projection, chunks: list[str], literals: list[str], rounds: int) -> float:
    """Median microseconds per chunk of one reply through a fresh Dealiaser."""
    samples = []
    for _ in range(rounds):
        d = Dealiaser(p.display, literals)
        t0 = time.perf_counter()
        for chunk in chunks:
            d.feed(chunk)
        d.flush()
        samples.append((time.perf_counter() - t0) / len(chunks))
    return round(statistics.median(samples) * 1e6, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--per-room", type=int, default=20, help="entities sharing a location (what one NPC sees)")
    args = ap.parse_args()

    s, actors = build(args.entities, args.per_room)
    moment = Moment(timeline="main-timeline-0001", tick=123456789, calendar="Day 3")
    picks = [actors[(i * 7919) % len(actors)] for i in range(args.rounds)]
    Projection(s, picks[0])  # build the index and matcher once (measured separately below)
    prompt_for(Projection(s, picks[0]), moment)

    proj_t, scan_t, guard_t = [], [], []
    sizes = []
    for actor in picks:
        t0 = time.perf_counter()
        p = Projection(s, actor)
        messages = prompt_for(p, moment)
        p.resolve(p.alias(actor))
        proj_t.append(time.perf_counter() - t0)
        sizes.append(len(p.visible_entities()))
        t0 = time.perf_counter()
        scan_baseline(p)
        scan_t.append(time.perf_counter() - t0)
    big = [{"role": "system", "content": (messages[0]["content"] * 8)[:8192]}, messages[1]]
    p = Projection(s, picks[0])
    gm = p.guard_moment(moment)
    # The alias mask where the guard takes one (it is consulted only once an ID's text is found).
    extra = {"aliases": p.alias_mask} if "aliases" in inspect.signature(check_outgoing).parameters else {}
    wide_t, seen_t = [], []
    for i in range(args.rounds):
        fresh = [{"role": m["role"], "content": f"{m['content']} {i}"} for m in big]
        wide = [{"role": m["role"], "content": m["content"].replace("\n", " \u2014\n") + f" {i}"} for m in big]
        t0 = time.perf_counter()
        check_outgoing(fresh, p.engine_ids, moment=gm, **extra)
        guard_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        check_outgoing(wide, p.engine_ids, moment=gm, **extra)
        wide_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        check_outgoing(big, p.engine_ids, moment=gm, **extra)
        seen_t.append(time.perf_counter() - t0)

    moved, added = [], []
    rounds = max(10, args.rounds // 20)
    for i in range(rounds):
        apply_ops(
            s,
            [o.PatchEntity(picks[i], location_id=s.world.entities[picks[i + 1]].location_id)],
            s.revision + 1,
            StateLimits(max_entities=10**7),
        )
        t0 = time.perf_counter()
        prompt_for(Projection(s, picks[i]), moment)
        moved.append(time.perf_counter() - t0)
        here = s.world.entities[picks[i]].location_id
        new = Entity(id=f"BP_Spawn_C_{3_000_000_000 + i}", kind="character", location_id=here)
        apply_ops(s, [o.UpsertEntity(new)], s.revision + 1, StateLimits(max_entities=10**7))
        t0 = time.perf_counter()
        prompt_for(Projection(s, picks[i]), moment)
        added.append(time.perf_counter() - t0)

    p = Projection(s, picks[0])
    aliases = [p.alias(e.id) for e in p.visible_entities()][:10]
    reply = " ".join(f"{a} glares at the door and mutters." for a in aliases)
    words = [w + " " for w in reply.split(" ")]
    threes = [reply[i : i + 3] for i in range(0, len(reply), 3)]
    names = [e.name for e in p.visible_entities()]
    dealias = {
        "dealias_us_per_chunk_p50_words": dealias_us(p, words, [], args.rounds),
        "dealias_us_per_chunk_p50_3chars": dealias_us(p, threes, [], args.rounds),
        "dealias_us_per_chunk_p50_3chars_listed": dealias_us(p, threes, names, args.rounds),
    }
    thousand = [e.name for e in s.world.entities.values() if e.name][:1000]
    cold_t, warm_t = [], []
    for _ in range(max(5, args.rounds // 40)):
        re.purge()  # cold: the regex compiled anew, as for a session's first run with these names
        t0 = time.perf_counter()
        AliasTable(thousand)
        cold_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        AliasTable(thousand)  # warm: re's cache holds the pattern (the same names again)
        warm_t.append(time.perf_counter() - t0)
    dealias["alias_table_ms_1000_names_cold"] = ms(cold_t, 0.5)
    dealias["alias_table_ms_1000_names_warm"] = ms(warm_t, 0.5)
    dealias["alias_table_names"] = len(set(thousand))

    ids = list(Projection(s, "").engine_ids)
    t0 = time.perf_counter()
    IdMatcher(ids)
    build_ms = (time.perf_counter() - t0) * 1000
    matcher_for(frozenset(ids))

    print(
        json.dumps(
            {
                "entities": len(s.world.entities),
                "engine_ids": len(ids),
                "perceived_per_prompt_p50": statistics.median(sizes),
                "projection_ms_p50": ms(proj_t, 0.5),
                "projection_ms_p95": ms(proj_t, 0.95),
                "baseline_scan_ms_p50": ms(scan_t, 0.5),
                "guard_ms_p50": ms(guard_t, 0.5),
                "guard_ms_p50_nonascii": ms(wide_t, 0.5),
                "guard_ms_p50_seen": ms(seen_t, 0.5),
                "guard_prompt_chars": sum(len(m["content"]) for m in big),
                "first_prompt_after_revision_ms_p50": ms(moved, 0.5),
                "first_prompt_after_new_entity_ms_p50": ms(added, 0.5),
                "matcher_build_ms": round(build_ms, 2),
                "matcher_backend": IdMatcher(["abcd-1"]).backend,
                **dealias,
            }
        )
    )


if __name__ == "__main__":
    main()
