// Run IDs made on the client side, so a game can cancel or look up a run before
// its `started` event arrives.
#pragma once

#include <string>

namespace game_sidecar {
namespace internal {

// "run-" and 16 hex digits, unique within the process (they need only be unique
// among the sidecar's runs; they are not secret). One process-wide counter, seeded
// once from std::random_device and mixed by splitmix64 (a bijection, so no two
// calls collide), rather than a thread_local engine: a thread_local
// std::mt19937_64 is 2,504 bytes of static TLS, and libgame_sidecar must carry
// almost none to load with dlopen into an editor that has loaded other modules
// (issue 32 item 1; glibc's surplus for a dlopen'ed library's static TLS is small).
std::string NewRunId();

}  // namespace internal
}  // namespace game_sidecar
