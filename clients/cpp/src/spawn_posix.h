// Spawning a child with three pipes and nothing else (POSIX). Internal header.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace game_sidecar {
namespace internal {

struct SpawnedChild {
  pid_t pid = -1;
  int stdin_fd = -1;   // parent writes (we only ever close it)
  int stdout_fd = -1;  // parent reads
  int stderr_fd = -1;  // parent reads
};

// Starts `argv[0]` (searched in PATH when it has no '/') with `env` as its whole
// environment and `cwd` as its working directory ("" = ours). The child gets
// exactly fds 0, 1, 2: every other descriptor, ours or the host's, is closed in
// the child, so nothing the game holds open can keep the sidecar alive or leak to it.
// Returns false with `error` set when the pipes or the spawn fail (e.g. ENOENT).
bool SpawnWithPipes(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    const std::string& cwd, SpawnedChild* out, std::string* error);

// A pipe whose both ends are close-on-exec and numbered above 2.
bool CloexecPipe(int fds[2], std::string* error);

// Reads up to `n` random bytes from the OS as lowercase hex (2n characters).
std::string RandomHex(size_t n);

// The current process environment as KEY=VALUE strings, minus the given keys.
std::vector<std::string> EnvironmentWithout(const std::vector<std::string>& keys);

}  // namespace internal
}  // namespace game_sidecar
