// Spawning a child with three pipes and nothing else (Windows). Internal header.
#pragma once

#include <string>
#include <vector>

namespace game_sidecar {
namespace internal {

struct SpawnedWinChild {
  unsigned long pid = 0;
  void* process = nullptr;       // HANDLE
  void* job = nullptr;           // HANDLE of the kill-on-close Job Object holding the process
  void* stdin_write = nullptr;   // parent writes (we only ever close it)
  void* stdout_read = nullptr;   // parent reads
  void* stderr_read = nullptr;   // parent reads
};

// Starts argv (UTF-8; argv[0] found the way CreateProcessW finds a command-line
// name: the game's folder, the current folder, the system folders, PATH) with
// `env` (UTF-8 KEY=VALUE) as its whole environment and `cwd` as its working
// directory ("" = ours). Only the three pipe ends are inherited. The process
// is in a new Job Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE before its
// first instruction runs. Returns false with `error` set (the system's message).
bool SpawnWithPipesWin(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& cwd, SpawnedWinChild* out, std::string* error);

// UTF-8 -> UTF-16; false on invalid UTF-8.
bool Utf8ToWide(const std::string& in, std::wstring* out);
// UTF-16 -> UTF-8 (unpaired surrogates become U+FFFD).
std::string WideToUtf8(const std::wstring& in);
// One argument quoted so CommandLineToArgvW (and the C runtime) gives it back unchanged.
std::wstring QuoteArgWin(const std::wstring& arg);
// A CREATE_UNICODE_ENVIRONMENT block: sorted case-insensitively by name, each
// entry NUL-terminated, one more NUL at the end.
std::wstring EnvironmentBlock(const std::vector<std::wstring>& entries);

std::string RandomHex(size_t n);
std::vector<std::string> EnvironmentWithout(const std::vector<std::string>& keys);

}  // namespace internal
}  // namespace game_sidecar
