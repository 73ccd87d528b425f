// A stand-in game for the kill-on-job-close test: launches the fake sidecar
// (argv[1], mode ignore-eof) through the launcher, prints the sidecar's pid
// on stdout, then waits to be killed (TerminateProcess) without cleaning up.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "sidecar_child.h"
#include "spawn_win.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
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
  std::printf("%d\n", child->pid());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::minutes(5));
  return 0;
}
