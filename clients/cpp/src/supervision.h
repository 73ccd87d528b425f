// Constants the two halves of SidecarProcess share (sidecar_process.cpp,
// sidecar_supervisor.cpp). Internal header.
#pragma once

#include <chrono>
#include <cstddef>

#include "game_sidecar/sidecar_client.h"

namespace game_sidecar {
namespace internal {

// SidecarExit::stderr_tail holds at most this many lines.
constexpr size_t kExitTailLines = 20;
// How often the supervisor looks at the exit, the liveness answers and the
// verdicts its clients wait for; also the slice of Stop's grace.
constexpr std::chrono::milliseconds kTick{50};

// The internal channel of the liveness check: no keepalive of its own (the
// check is the liveness), a deadline per call.
inline ClientOptions ProbeOptions() {
  ClientOptions o;
  o.keepalive = std::chrono::milliseconds(0);
  return o;
}

}  // namespace internal
}  // namespace game_sidecar
