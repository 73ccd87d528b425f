#!/usr/bin/env bash
# The Unreal side (issue 25), without Unreal:
#  1. compile the plugin's C++ (clients/unreal/GameSidecar/Source/GameSidecar)
#     against the stand-in engine headers in clients/unreal/stand-in, for Linux
#     and for Win64 (the platform branches), every warning an error;
#  2. build libgame_sidecar and run its plain-C test against the real sidecar
#     (CTest capi.c_program);
#  3. link the plugin's C++ with the stand-ins' runtime and that library, and run
#     it against the real sidecar (clients/unreal/checks/run/plugin_run_test.cpp);
#  4. scripts/unreal_package: assemble dist/unreal/GameSidecar/ and check the
#     library (dependencies, exports, glibc floor); and check that the checker
#     refuses a library linked against the shared gRPC;
#  5. the Win64 DLL's checks (imports, exports from the PE tables) on two DLLs
#     made by mingw-w64, and --win64-dir's placement (skipped without mingw-w64).
#
# Environment: GAME_SIDECAR_EXE (default .venv/bin/game-sidecar), UNREAL_BUILD_DIR
# (default build/unreal), CPP_JOBS (default 2), CXX (default g++).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${UNREAL_BUILD_DIR:-$root/build/unreal}"
jobs="${CPP_JOBS:-2}"
cxx="${CXX:-g++}"
exe="${GAME_SIDECAR_EXE:-$root/.venv/bin/game-sidecar}"
python="$root/.venv/bin/python"
[[ -x "$python" ]] || python=python3

echo "== plugin compile check against stand-in engine headers ($cxx)"
plugin="$root/clients/unreal/GameSidecar/Source/GameSidecar"
gen="$build/stand-in-generated"
rm -rf "$gen" && mkdir -p "$gen"
# What UHT would write: per header, Super/ThisClass for each GENERATED_BODY line.
"$python" - "$plugin/Public" "$gen" <<'PY'
import re, sys
from pathlib import Path
public, out = Path(sys.argv[1]), Path(sys.argv[2])
for header in sorted(public.glob("*.h")):
    lines = header.read_text().splitlines()
    defs = []
    owner = None
    for number, line in enumerate(lines, start=1):
        m = re.match(r"\s*(class|struct)\s+(?:\w+_API\s+)?(\w+)\s*(?::\s*public\s+(\w+))?", line)
        if m and not line.rstrip().endswith(";"):
            owner = (m.group(1), m.group(2), m.group(3))
        if "GENERATED_BODY()" in line:
            if owner is None:
                sys.exit(f"{header.name}:{number}: GENERATED_BODY outside a class")
            kind, name, base = owner
            body = f"public: typedef {base} Super; typedef {name} ThisClass; private:" if kind == "class" and base else ""
            defs.append(f"#undef STANDIN_GB_{number}\n#define STANDIN_GB_{number} {body}")
    (out / f"{header.stem}.generated.h").write_text("#pragma once\n" + "\n".join(defs) + "\n")
PY
flags=(-std=c++17 -fsyntax-only -Wall -Wextra -Werror -Wno-unused-parameter
       -DGAMESIDECAR_API= -I"$root/clients/unreal/stand-in" -I"$gen" -I"$plugin/Public" -I"$plugin/Private"
       -I"$root/clients/cpp/capi/include")
for cpp in "$plugin"/Private/*.cpp; do
  "$cxx" "${flags[@]}" "$cpp"
  "$cxx" "${flags[@]}" -DPLATFORM_WINDOWS=1 -DPLATFORM_LINUX=0 '-DGAME_SIDECAR_DLL_NAME=TEXT("game_sidecar.dll")' "$cpp"
  echo "   ok $(basename "$cpp") (Linux, Win64)"
done
# Facts the stand-ins can prove at compile time (clients/unreal/checks/).
for cpp in "$root"/clients/unreal/checks/*.cpp; do
  "$cxx" "${flags[@]}" "$cpp"
  echo "   ok checks/$(basename "$cpp")"
done

echo "== libgame_sidecar and its C test"
if [[ ! -x "$exe" ]]; then
  echo "test_unreal: no sidecar at $exe (set GAME_SIDECAR_EXE)" >&2
  exit 1
fi
cmake -S "$root/clients/cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGAME_SIDECAR_BUILD_CAPI=ON \
      -DGAME_SIDECAR_WERROR=ON -DGAME_SIDECAR_EXE="$exe" >/dev/null
cmake --build "$build" --target game_sidecar capi_c_test capi_unwind_test capi_dlopen_test -j "$jobs"
GAME_SIDECAR_EXE="$exe" ctest --test-dir "$build" -R '^capi\.' --output-on-failure --no-tests=error

echo "== the plugin's logic, run against the stand-ins and the real sidecar"
# The driver plays the engine (game instances, ticks) around the plugin's own
# Private/*.cpp; the stand-ins' out-of-line half is clients/unreal/stand-in/*.cpp.
run="$build/plugin-run"
rm -rf "$run" && mkdir -p "$run"
"$cxx" -std=c++17 -O0 -g -Wall -Wextra -Werror -Wno-unused-parameter -DGAMESIDECAR_API= \
  -I"$root/clients/unreal/stand-in" -I"$gen" -I"$plugin/Public" -I"$plugin/Private" -I"$root/clients/cpp/capi/include" \
  "$plugin"/Private/*.cpp "$root"/clients/unreal/stand-in/*.cpp \
  "$root"/clients/unreal/checks/run/*.cpp \
  -L"$build/capi" -lgame_sidecar -Wl,-rpath,"$build/capi" -pthread -o "$run/plugin_run_test"
# Each wait has its own deadline; this one bounds the whole run.
timeout 300 "$run/plugin_run_test" "$exe" "$root/clients/cpp/tests/sidecar_test.toml"

echo "== scripts/unreal_package"
# --max-glibc: the library must load on Unreal's Linux sysroots (glibc 2.17 / 2.28).
UNREAL_BUILD_DIR="$build" "$python" "$root/scripts/unreal_package" --max-glibc 2.28
# The checker must refuse what the plugin must never ship: a library that
# brings the shared gRPC/protobuf and exports their symbols.
bad="$(ls /usr/lib/*/libgrpc++_unsecure.so.* 2>/dev/null | head -1 || true)"
if [[ -n "$bad" ]]; then
  if "$python" "$root/scripts/unreal_package" --check-only "$bad" >/dev/null 2>&1; then
    echo "test_unreal: unreal_package accepted $bad" >&2
    exit 1
  fi
  echo "   ok: the check refuses $(basename "$bad")"
fi

echo "== the Win64 library's checks (PE tables)"
# game_sidecar.dll itself is built by MSVC on a hosted runner (no gRPC for
# Windows here); what is tested here is the check that job and --win64-dir run:
# two DLLs made by the real mingw-w64 linker, one shaped as the library must be
# (the header's 39 exports, KERNEL32 only), one as it must never be (the C++
# runtime's DLL imported, a gRPC symbol exported, a function missing).
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
  pe="$build/pe-check"
  rm -rf "$pe" && mkdir -p "$pe/good" "$pe/bad"
  # The header's functions as unreal_package itself reads them (its header_functions).
  "$python" - "$root/scripts/unreal_package" "$pe" <<'PY'
import importlib.util, sys
from importlib.machinery import SourceFileLoader
loader = SourceFileLoader("unreal_package", sys.argv[1])
package = importlib.util.module_from_spec(importlib.util.spec_from_loader("unreal_package", loader))
loader.exec_module(package)
names = sorted(package.header_functions(package.HEADER))
with open(f"{sys.argv[2]}/good.def", "w") as f:
    f.write("LIBRARY game_sidecar.dll\nEXPORTS\n" + "".join(f"  {n}=stub\n" for n in names))
with open(f"{sys.argv[2]}/bad.def", "w") as f:
    f.write("LIBRARY game_sidecar.dll\nEXPORTS\n" + "".join(f"  {n}=stub\n" for n in names[1:]) + "  grpc_init=stub\n")
PY
  printf '%s\n' '#include <windows.h>' \
    'BOOL WINAPI stub_entry(HINSTANCE h, DWORD r, LPVOID p) { (void)h; (void)r; (void)p; return TRUE; }' \
    'DWORD stub(void) { return GetCurrentProcessId(); }' > "$pe/stub.c"
  x86_64-w64-mingw32-gcc -shared -nostdlib -Wl,-e,stub_entry -o "$pe/good/game_sidecar.dll" "$pe/stub.c" "$pe/good.def" \
    -lkernel32 -Wl,--out-implib,"$pe/good/game_sidecar.lib"
  # C++ linked without -static: it imports libstdc++-6.dll, as a mingw build without the
  # capi CMake's static link would.
  printf '%s\n' '#include <string>' \
    'extern "C" unsigned long stub(void) { static std::string s("x"); return (unsigned long)s.size(); }' > "$pe/bad.cpp"
  x86_64-w64-mingw32-g++ -shared -o "$pe/bad/game_sidecar.dll" "$pe/bad.cpp" "$pe/bad.def"
  "$python" "$root/scripts/unreal_package" --check-only "$pe/good/game_sidecar.dll" >/dev/null \
    || { echo "test_unreal: the Win64 check refused a DLL shaped as game_sidecar.dll must be" >&2; exit 1; }
  out="$("$python" "$root/scripts/unreal_package" --check-only "$pe/bad/game_sidecar.dll" 2>&1 || true)"
  for want in "imports libstdc++-6.dll" "not in the header, e.g. grpc_init" "does not export"; do
    grep -q "$want" <<<"$out" || { echo "test_unreal: the Win64 check missed: $want" >&2; echo "$out" >&2; exit 1; }
  done
  echo "   ok: the Win64 check passes the right shape and refuses the wrong one"
  # --win64-dir puts the pair where GameSidecarLibrary.Build.cs looks (the Linux library is built above).
  UNREAL_BUILD_DIR="$build" "$python" "$root/scripts/unreal_package" --win64-dir "$pe/good" --out "$pe/plugin" >/dev/null
  for f in game_sidecar.dll game_sidecar.lib; do
    test -f "$pe/plugin/Source/ThirdParty/GameSidecarLibrary/lib/Win64/$f" \
      || { echo "test_unreal: --win64-dir did not place $f" >&2; exit 1; }
  done
  echo "   ok: --win64-dir places game_sidecar.dll and game_sidecar.lib"
else
  echo "test_unreal: Win64 library checks skipped, no x86_64-w64-mingw32-gcc (apt-get install mingw-w64)"
fi
echo "== unreal: all passed"
