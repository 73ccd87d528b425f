#!/usr/bin/env bash
# Makes the static archives libgame_sidecar links, in a form a shared library
# can hold:  pic_archives.sh <out-dir>
#
# Debian compiles its static archives as position-independent *executable*
# code (-fPIE). Almost all of that links into a shared object, except two
# things only an executable may use: thread_local variables accessed with the
# local-exec TLS model (R_X86_64_TPOFF32), and direct PC-relative references to
# data of a shared library (R_X86_64_PC32 against libc's `stderr`, which an
# executable resolves with a copy relocation). On Debian 12 that is 2 objects
# in protobuf, 15 in re2 and 5 in abseil. This script copies the archives to
# <out-dir>, fetches the exact Debian sources of the packages that need it
# (apt-get source, with a private source list: the system's apt configuration
# is not touched), recompiles just those objects with -fPIC against the
# installed headers, and swaps them in. It checks that each new object defines
# exactly the strong global symbols of the one it replaces, and that no local-exec TLS
# relocation is left.
#
# Environment: GAME_SIDECAR_DEBIAN_SRC: where the sources are unpacked
# (default <out-dir>/debian-src; kept, so a second run needs no network).
set -euo pipefail

out="${1:?usage: pic_archives.sh <out-dir>}"
libdir="${GAME_SIDECAR_STATIC_LIBDIR:-/usr/lib/$(gcc -print-multiarch)}"
src="${GAME_SIDECAR_DEBIAN_SRC:-$out/debian-src}"
mkdir -p "$out" "$src"
out="$(cd "$out" && pwd)"
src="$(cd "$src" && pwd)"

names=(grpc++_unsecure grpc_unsecure gpr upb address_sorting re2 cares protobuf z)
archives=()
for n in "${names[@]}"; do archives+=("$libdir/lib$n.a"); done
for a in "$libdir"/libabsl_*.a; do archives+=("$a"); done
for a in "${archives[@]}"; do
  [[ -f "$a" ]] || { echo "pic_archives: $a missing (install its -dev package)" >&2; exit 1; }
  cp "$a" "$out/"
done

# package of an archive -> (Debian source package, -dev package holding the archive)
source_of() {
  case "$(basename "$1")" in
    libprotobuf.a) echo "protobuf libprotobuf-dev" ;;
    libre2.a) echo "re2 libre2-dev" ;;
    libabsl_*) echo "abseil libabsl-dev" ;;
    *) echo "" ;;
  esac
}

fetch_source() {  # <source-package> <dev-package> -> prints the unpacked tree
  local pkg="$1" dev="$2" version tree
  version="$(dpkg-query -W -f='${source:Version}' "$dev")"
  tree="$(find "$src" -maxdepth 1 -type d -name "${pkg}-*" | head -1)"
  if [[ -z "$tree" || ! -f "$src/.$pkg-$version" ]]; then
    local apt="$src/.apt"
    mkdir -p "$apt/lists/partial"
    {
      echo "deb-src http://deb.debian.org/debian bookworm main"
      echo "deb-src http://deb.debian.org/debian bookworm-updates main"
      echo "deb-src http://deb.debian.org/debian-security bookworm-security main"
    } > "$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
                -o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1)
    [[ -n "$(ls "$apt/lists" 2>/dev/null | grep -v partial)" ]] || apt-get "${opts[@]}" update >&2
    (cd "$src" && apt-get "${opts[@]}" source "$pkg=$version" >&2)
    touch "$src/.$pkg-$version"
    tree="$(find "$src" -maxdepth 1 -type d -name "${pkg}-*" | head -1)"
  fi
  echo "$tree"
}

# Data objects of libc/libm: a PC32 relocation against one of them needs -fPIC.
work="$(mktemp -d)"
nm -D --defined-only "$(gcc -print-file-name=libc.so.6)" "$(gcc -print-file-name=libm.so.6)" 2>/dev/null |
  awk '$2 ~ /^[BDVR]$/ {sub(/@.*/, "", $3); print $3}' | sort -u > "$work/libc_data"
[[ -s "$work/libc_data" ]] || { echo "pic_archives: cannot list libc's data symbols" >&2; exit 1; }
# 0 when the object cannot go into a shared library as compiled.
needs_pic() {
  local rel
  rel="$(readelf -rW "$1")"
  grep ' R_X86_64_TPOFF32 ' <<<"$rel" >/dev/null && return 0
  awk '$3 == "R_X86_64_PC32" {sub(/@.*/, "", $5); print $5}' <<<"$rel" | sort -u | grep -Fxf "$work/libc_data" >/dev/null
}
trap 'rm -rf "$work"' EXIT
replaced=0
for a in "$out"/*.a; do
  read -r pkg dev <<<"$(source_of "$a")"
  members=$(ar t "$a")
  for m in $members; do
    rm -rf "$work/x" && mkdir -p "$work/x"
    (cd "$work/x" && ar x "$a" "$m")
    needs_pic "$work/x/$m" || continue
    if [[ -z "$pkg" ]]; then
      echo "pic_archives: $(basename "$a")($m) has local-exec TLS and no source rule" >&2
      exit 1
    fi
    tree="$(fetch_source "$pkg" "$dev")"
    stem="${m%.o}"; stem="${stem%.cc}"
    cands=$(find "$tree" -name "$stem.cc" -not -path '*/.pc/*' -not -path '*test*' -not -path '*/python/*')
    if [[ $(echo "$cands" | grep -c .) -ne 1 ]]; then
      echo "pic_archives: no single source for $(basename "$a")($m): $cands" >&2
      exit 1
    fi
    flags=(-O2 -fPIC -DNDEBUG -std=c++17 -w)
    # Installed headers first (the configuration Debian built with); the
    # source tree only for the private headers it does not install.
    [[ "$pkg" == protobuf ]] && flags+=(-DHAVE_PTHREAD -idirafter "$tree/src")
    [[ "$pkg" == re2 ]] && flags+=(-idirafter "$tree")
    g++ "${flags[@]}" -c "$cands" -o "$work/$m"
    # Strong global definitions must match (weak inline copies may differ with inlining).
    if [[ "$(nm --defined-only --extern-only "$work/x/$m" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort)" != \
          "$(nm --defined-only --extern-only "$work/$m" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort)" ]]; then
      echo "pic_archives: rebuilt $m does not define the same symbols as Debian's" >&2
      exit 1
    fi
    (cd "$work" && ar r "$a" "$m")
    echo "pic_archives: $(basename "$a")($m) rebuilt with -fPIC from $(basename "$tree")"
    replaced=$((replaced + 1))
  done
done
for a in "$out"/*.a; do
  for m in $(ar t "$a"); do
    rm -rf "$work/x" && mkdir -p "$work/x" && (cd "$work/x" && ar x "$a" "$m")
    if needs_pic "$work/x/$m"; then
      echo "pic_archives: $(basename "$a")($m) still cannot go into a shared library" >&2
      exit 1
    fi
  done
done
echo "pic_archives: $replaced object(s) rebuilt; archives in $out"
touch "$out/.complete"
