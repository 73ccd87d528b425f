// Two stand-ins for launcher_tests:
//   launcher_host <fake sidecar>   a game for the kill-on-job-close test: launches the
//       fake (mode ignore-eof) through the launcher, prints the sidecar's pid on
//       stdout, then waits to be killed (TerminateProcess) without cleaning up;
//   launcher_host --show-cwd-env   a child that prints its working directory (UTF-8)
//       as its one stdout line and each environment entry as a stderr line, then exits.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <windows.h>

#include "sidecar_child.h"
#include "spawn_win.h"

using game_sidecar::internal::WideToUtf8;

// What it reports goes out as a handshake-shaped line (a JSON object with a
// "sidecar" key), the only kind of stdout line a launcher takes as the first
// (docs/protocol.md §1); the tests read "value" back.
static void Report(const std::string& value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\' || c == '"') escaped += '\\';
    escaped += c;
  }
  std::printf("{\"sidecar\":\"launcher_host\",\"value\":\"%s\"}\n", escaped.c_str());
  std::fflush(stdout);
}

static int ShowCwdAndEnvironment() {
  wchar_t cwd[MAX_PATH * 4];
  DWORD n = GetCurrentDirectoryW(MAX_PATH * 4, cwd);
  Report(WideToUtf8(std::wstring(cwd, n)));
  wchar_t* block = GetEnvironmentStringsW();
  for (const wchar_t* e = block; *e != L'\0'; e += wcslen(e) + 1)
    std::fprintf(stderr, "%s\n", WideToUtf8(e).c_str());
  FreeEnvironmentStringsW(block);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (std::string(argv[1]) == "--show-cwd-env") return ShowCwdAndEnvironment();
  game_sidecar::internal::ChildOptions options;
  std::string error;
  auto child = game_sidecar::internal::Child::Spawn(
      options, {argv[1], "ignore-eof"}, game_sidecar::internal::EnvironmentWithout({}), nullptr, &error);
  if (!child) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::atomic<bool> abort{false};
  std::string line;
  if (child->WaitFirstLine(std::chrono::seconds(20), abort, &line) != game_sidecar::internal::Child::FirstLine::kGot)
    return 1;
  Report(std::to_string(child->pid()));
  std::this_thread::sleep_for(std::chrono::minutes(5));
  return 0;
}
