#!/usr/bin/env bash
# Configure, build and run the C++ client's CTest suite (clients/cpp) against
# the real sidecar process. Fails (non-zero) on any configure, build or test error.
#
#   scripts/test_cpp.sh                 # everything
#   scripts/test_cpp.sh -R RealSidecar  # extra arguments go to ctest
#
# Environment: GAME_SIDECAR_EXE (default: the frozen build dist/game-sidecar/game-sidecar
# when scripts/package has built it, else .venv/bin/game-sidecar),
# CPP_BUILD_DIR (default clients/cpp/build), CPP_JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CPP_BUILD_DIR:-$root/clients/cpp/build}"
jobs="${CPP_JOBS:-2}"
exe="${GAME_SIDECAR_EXE:-}"
if [[ -z "$exe" ]]; then
  exe="$root/.venv/bin/game-sidecar"
  [[ -x "$root/dist/game-sidecar/game-sidecar" ]] && exe="$root/dist/game-sidecar/game-sidecar"
fi
echo "== sidecar under test: $exe"

if [[ ! -x "$exe" ]]; then
  echo "test_cpp: no sidecar at $exe (install the package into .venv, or set GAME_SIDECAR_EXE)" >&2
  exit 1
fi
for tool in cmake protoc grpc_cpp_plugin; do
  command -v "$tool" >/dev/null || { echo "test_cpp: $tool not found (see docs/unreal.md for the packages)" >&2; exit 1; }
done

echo "== configure ($build)"
cmake -S "$root/clients/cpp" -B "$build" -DGAME_SIDECAR_EXE="$exe" -DGAME_SIDECAR_WERROR=ON
echo "== build (-j$jobs)"
cmake --build "$build" -j "$jobs"
echo "== test"
export GAME_SIDECAR_EXE="$exe"
ctest --test-dir "$build" --output-on-failure --no-tests=error "$@"
