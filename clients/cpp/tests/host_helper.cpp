// A stand-in game for the orphan test: launches the sidecar given on its
// command line, prints "sidecar_pid=N" and waits to be killed (SIGKILL, so no
// destructor runs: only the sidecar's own stdin/parent watch can stop it).
#include <cstdio>
#include <unistd.h>

#include "game_sidecar/sidecar_process.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: host_helper SIDECAR [ARGS...]\n");
    return 64;
  }
  game_sidecar::SidecarOptions options;
  options.executable = argv[1];
  options.args.assign(argv + 2, argv + argc);
  options.handshake_timeout = std::chrono::milliseconds(30000);
  game_sidecar::LaunchError error;
  auto sidecar = game_sidecar::SidecarProcess::Launch(options, &error);
  if (!sidecar) {
    std::fprintf(stderr, "%s\n", error.ToString().c_str());
    return 1;
  }
  std::printf("sidecar_pid=%d\n", sidecar->pid());
  std::fflush(stdout);
  for (;;) pause();
}
