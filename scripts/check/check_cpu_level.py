#!/usr/bin/env python3
"""Which x86-64 level each native file of the frozen build needs, checked against
the table a game developer reads (docs/shipping.md, "CPU requirements").

A player's older CPU dies with SIGILL on one instruction above its level, so every
shared object and executable under the folder is disassembled (objdump) and its
instructions classified: x86-64 (baseline, SSE2), x86-64-v2 (SSE3..SSE4.2, POPCNT),
x86-64-v3 (AVX, AVX2, FMA, F16C, BMI), x86-64-v4 (AVX-512 and other later extensions).

A static scan cannot tell kernels a library selects at run time with CPUID from code
it runs unconditionally, so the table says, per file, either the level the file may
need or `dispatch` (upstream documents run-time selection; the scan's level is
reported, not enforced). A file the table does not name must stay at the `*` row.
Exit status 1 when a file needs more than the table allows, or when a file is named
nowhere and exceeds the default.

Usage: scripts/check/check_cpu_level.py [DIST_FOLDER] [--table docs/shipping.md] [--json]
Each file's instruction counts are cached by content hash in DIST_FOLDER/../.cpu-level-cache.v2.json.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"]
DISPATCH = "dispatch"
TABLE_BEGIN = "<!-- cpu-requirements:begin -->"
TABLE_END = "<!-- cpu-requirements:end -->"

V2 = set(
    "addsubps addsubpd haddps haddpd hsubps hsubpd lddqu movddup movshdup movsldup fisttp "  # SSE3
    "pabsb pabsw pabsd palignr phaddw phaddd phaddsw phsubw phsubd phsubsw pmaddubsw pmulhrsw "  # SSSE3
    "pshufb psignb psignw psignd "
    "blendpd blendps blendvpd blendvps dppd dpps extractps insertps movntdqa mpsadbw packusdw "  # SSE4.1
    "pblendvb pblendw pcmpeqq pextrb pextrd pextrq pinsrb pinsrd pinsrq pmaxsb pmaxsd pmaxud pmaxuw "
    "pminsb pminsd pminud pminuw pmuldq pmulld ptest roundpd roundps roundsd roundss phminposuw "
    "pmovsxbw pmovsxbd pmovsxbq pmovsxwd pmovsxwq pmovsxdq pmovzxbw pmovzxbd pmovzxbq pmovzxwd "
    "pmovzxwq pmovzxdq "
    "crc32 crc32b crc32w crc32l crc32q pcmpestri pcmpestrm pcmpistri pcmpistrm pcmpgtq "  # SSE4.2
    "popcnt cmpxchg16b".split()
)
#: Not tzcnt: without BMI1 it runs as bsf, the same for the non-zero inputs compilers emit it for.
V3_SCALAR = set("andn bextr blsi blsmsk blsr bzhi mulx pdep pext rorx sarx shlx shrx lzcnt movbe".split())
#: VEX mnemonics that are not AVX (old system instructions that start with v).
NOT_AVX = {"verr", "verw"}
#: Mnemonics that exist only with AVX-512 (EVEX) or with extensions newer than v3 (AVX-VNNI...).
ABOVE_V3 = re.compile(
    r"^v(pternlog|permt2|permi2|pcompress|compress|pexpand|expand|pmovm2|pmov[bwdq]2m|pmovs?u?s?[qdw][bwd]$|"
    r"rndscale|range|getexp|getmant|scalef|fixupimm|reduce|pro[lr]|pabsq|p(max|min)[su]q|pmullq|"
    r"cvt\w*[u]?qq|cvtu|pconflict|plzcnt|popcnt|pdpbusd|pdpwssd|dpbf16|cvtne2ps2bf16|cvtneps2bf16|"
    r"pshld|pshrd|pmultishift|permb|permw|p2intersect|fpclass|blendm|pblendm|ptestn?m|pbroadcastm|"
    r"rcp14|rsqrt14|rcp28|rsqrt28|exp2|gather.pf|scatter|pscatter|dbpsadbw|alignq|alignd|insert[fi]64x|"
    r"insert[fi]32x[48]|extract[fi]64x|extract[fi]32x[48]|broadcast[fi]64x|broadcast[fi]32x[248]|"
    r"shuf[fi]\d)"
)
#: Registers only EVEX can name: zmm, mask registers, xmm/ymm 16-31.
EVEX_REGS = re.compile(r"%zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b|\{%k")
EVEX = "<EVEX registers>"
INSN = re.compile(r"^\s*[0-9a-f]+:\t(?:(?:rex\S*|lock|rep\S*|notrack|bnd|data16|addr32|cs|ds)\s+)*([a-z][\w.]*)", re.M)


def classify(mnemonic: str) -> int:
    m = mnemonic.split(".")[0]
    if m.startswith("{"):
        return 3
    if m in V2:
        return 1
    if m in V3_SCALAR:
        return 2
    if m.startswith("v") and m not in NOT_AVX:
        return 3 if ABOVE_V3.match(m) else 2
    if m.startswith("k") and m[1:4] in ("mov", "and", "or", "xor", "not", "add", "shi", "tes", "unp"):
        return 3  # AVX-512 mask instructions (kmovw, kandw...)
    return 0


def scan(path: Path) -> dict[str, int]:
    """{mnemonic: count} of one ELF file's instructions, plus "<EVEX registers>": operands only
    AVX-512 can name (cached as is, so a change of classification needs no rescan)."""
    proc = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", "-w", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    counts: Counter[str] = Counter()
    evex = 0
    tail = b""
    while block := proc.stdout.read(1 << 22):
        data = tail + block
        cut = data.rfind(b"\n") + 1
        text, tail = data[:cut].decode("latin-1"), data[cut:]
        counts.update(INSN.findall(text))
        evex += len(EVEX_REGS.findall(text))
    proc.wait()
    if evex:
        counts[EVEX] = evex
    return dict(counts)


def level_of(counts: dict[str, int]) -> dict[str, object]:
    """{level, examples: {level name: [(mnemonic, count)...]}} of one file's scan."""
    per_level: dict[int, list[tuple[str, int]]] = {}
    for mnemonic, n in counts.items():
        level = 3 if mnemonic == EVEX else classify(mnemonic)
        if level:
            per_level.setdefault(level, []).append((mnemonic, n))
    level = max(per_level, default=0)
    examples = {LEVELS[lv]: sorted(items, key=lambda x: -x[1])[:6] for lv, items in sorted(per_level.items())}
    return {"level": LEVELS[level], "examples": examples}


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def read_table(doc: Path) -> list[tuple[str, str]]:
    """[(glob, level or 'dispatch')] from the table between the markers in `doc`."""
    text = doc.read_text()
    if TABLE_BEGIN not in text or TABLE_END not in text:
        raise SystemExit(f"check_cpu_level: {doc} has no {TABLE_BEGIN} ... {TABLE_END} table")
    rows = []
    for line in text.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0].splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0] or set(cells[0]) <= {"-", ":"} or cells[0].lower() == "files":
            continue
        if cells[1] not in LEVELS and cells[1] != DISPATCH:
            raise SystemExit(f"check_cpu_level: {doc}: unknown level {cells[1]!r} for {cells[0]!r}")
        rows.append((cells[0], cells[1]))
    if not any(glob == "*" for glob, _ in rows):
        raise SystemExit(f"check_cpu_level: {doc}: the table needs a `*` row (the folder's default level)")
    return rows


def allowed(rel: str, table: list[tuple[str, str]]) -> tuple[str, str]:
    """(glob, level) of the first row naming `rel`; the `*` row counts only when no other does."""
    for glob, level in table:
        if glob != "*" and fnmatch.fnmatch(rel, glob):
            return glob, level
    return "*", dict(table)["*"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "dist" / "game-sidecar"))
    parser.add_argument("--table", default=str(ROOT / "docs" / "shipping.md"))
    parser.add_argument("--json", action="store_true", help="print every file's result as JSON")
    args = parser.parse_args()
    folder = Path(args.folder).resolve()
    if not folder.is_dir():
        print(f"check_cpu_level: no folder {folder} (build it with scripts/package)", file=sys.stderr)
        return 2
    table = read_table(Path(args.table))
    cache_path = folder.parent / ".cpu-level-cache.v2.json"
    cache: dict[str, dict[str, int]] = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    results: dict[str, dict[str, object]] = {}
    failures: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p)):
        rel = path.relative_to(folder).as_posix()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in cache:
            cache[digest] = scan(path)
            cache_path.write_text(json.dumps(cache))  # a long scan interrupted keeps what it did
        result = level_of(cache[digest])
        glob, limit = allowed(rel, table)
        result["allowed"], result["row"] = limit, glob
        results[rel] = result
        if limit != DISPATCH and LEVELS.index(str(result["level"])) > LEVELS.index(limit):
            failures.append(f"{rel}: needs {result['level']} (e.g. {result['examples'][result['level']][:3]}), "
                            f"{args.table} allows {limit} (row `{glob}`)")
    cache_path.write_text(json.dumps(cache))
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for rel, r in results.items():
            if r["level"] != LEVELS[0] or r["allowed"] != LEVELS[0]:
                print(f"{r['level']:<10} allowed {r['allowed']:<10} {rel}")
    for failure in failures:
        print(f"check_cpu_level: FAIL {failure}", file=sys.stderr)
    print(f"check_cpu_level: {len(results)} native files, {len(failures)} above what {Path(args.table).name} "
          "declares", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
