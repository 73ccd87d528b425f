#!/bin/sh
# A stand-in sidecar for handshake fault injection. First argument is the mode.
mode="$1"
hs() { printf '{"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"127.0.0.1:9","pid":%s,"version":"0.0.0"}\n' "$$"; }
case "$mode" in
  exit-early)   echo "fatal: cannot load config (fake)" >&2; exit 4 ;;
  # Exit code 3 is the sidecar's "another sidecar holds my --state-dir lock".
  state-dir-locked) echo "state dir /tmp/fake-state is locked by another sidecar (fake)" >&2; exit 3 ;;
  garbage)      echo "warming up" >&2; echo "this is not json"; exec sleep 60 ;;
  wrong-sidecar) printf '{"sidecar":"other-tool","protocol":1,"transport":"tcp","address":"x","pid":1,"version":"1"}\n'; exec sleep 60 ;;
  wrong-protocol) printf '{"sidecar":"game-sidecar","protocol":2,"transport":"tcp","address":"x","pid":1,"version":"1"}\n'; exec sleep 60 ;;
  # stderr merged into stdout (Unreal's CreateProc with one pipe): JSON log lines, then the handshake.
  log-first)    i=1; while [ $i -le 5 ]; do printf '{"ts": 1.0, "level": "info", "msg": "starting %s", "logger": "fake"}\n' $i; i=$((i+1)); done
                hs; read -r _ignored; exit 0 ;;
  # Not a sidecar: only non-handshake lines, past the launcher's bound (200 lines).
  log-forever)  i=1; while [ $i -le 300 ]; do printf '{"ts": 1.0, "level": "info", "msg": "line %s"}\n' $i; i=$((i+1)); done; exec sleep 60 ;;
  silent)       echo "loading something slow (fake)" >&2; exec sleep 60 ;;
  env)          echo "magic=$GAME_SIDECAR_MAGIC token=$GAME_SIDECAR_TOKEN extra=$FAKE_EXTRA" >&2; hs; read -r _ignored; exit 0 ;;
  until-eof)    hs; echo "serving (fake)" >&2; read -r _ignored; echo "stdin closed, bye (fake)" >&2; exit 0 ;;
  ignore-eof)   hs; exec sleep 60 ;;
  ignore-term)  trap '' TERM; hs; exec sleep 60 ;;
  # Serves, then dies by itself with code 7 after 30 stderr lines.
  die-after-hs) hs; i=1; while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 7 ;;
  *)            echo "unknown mode $mode" >&2; exit 64 ;;
esac
