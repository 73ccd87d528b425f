#!/usr/bin/env bash
# Build and run the C# client's xunit suite (clients/csharp) against the real
# sidecar process with the scripted model. Also builds the Unity package tarball
# (scripts/unity_package) and compiles each of its asmdefs against exactly the
# references it lists and stand-ins of UnityEngine/UnityEditor/ugui (compile check
# only: scripts/check/check_unity_asmdefs.py), the example and the benchmark, so none of
# them rots. Fails (non-zero) on any build or test error.
#
#   scripts/test_csharp.sh                          # everything
#   scripts/test_csharp.sh --filter RunTests        # extra arguments go to dotnet test
#
# Environment: GAME_SIDECAR_EXE (default .venv/bin/game-sidecar),
# CSHARP_CONFIGURATION (default Debug).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exe="${GAME_SIDECAR_EXE:-$root/.venv/bin/game-sidecar}"
configuration="${CSHARP_CONFIGURATION:-Debug}"

command -v dotnet >/dev/null || { echo "test_csharp: dotnet not found (install the .NET 10 SDK)" >&2; exit 1; }
if [[ ! -x "$exe" ]]; then
  echo "test_csharp: no sidecar at $exe (install the package into .venv, or set GAME_SIDECAR_EXE)" >&2
  exit 1
fi

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
echo "== build (library, example, bench, tests)"
dotnet build "$root/clients/csharp/GameSidecar.slnx" -c "$configuration" -nologo -v quiet
echo "== Unity package: tarball, and each asmdef compiled against exactly its references"
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
python3 "$root/scripts/unity_package" --keep-staging "$staging" >/dev/null
python3 "$root/scripts/check/check_unity_asmdefs.py" --package "$staging/package"
echo "== test (sidecar: $exe)"
export GAME_SIDECAR_EXE="$exe"
dotnet test "$root/clients/csharp/tests/GameSidecar.Client.Tests" -c "$configuration" --no-build -nologo "$@"
