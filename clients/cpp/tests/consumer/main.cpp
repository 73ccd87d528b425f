// The consumer project's one file: compiles the public headers the way an
// Unreal module would (Unreal's `check` macro defined, no gRPC wanted), then
// launches the real sidecar and talks to it through the installed library.
//
//   consumer <game-sidecar executable> <config.toml>
#include <cstdio>

// Unreal's `check` is a function-like macro; any `check(` in a header the
// client pulls in would now fail to compile.
#define check(expr) static_assert(false, "Unreal's check macro reached a game_sidecar header")

#include "game_sidecar/delta_stream.h"
#include "game_sidecar/handshake.h"
#include "game_sidecar/run.h"
#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/sidecar_process.h"
#include "game_sidecar/status.h"

#if defined(GRPCPP_GRPCPP_H) || defined(GRPCPP_CLIENT_CONTEXT_H) || defined(GRPCPP_SUPPORT_STATUS_H) || \
    defined(GRPC_GRPC_H) || defined(GRPCPP_IMPL_CODEGEN_CONFIG_H)
#error "a game_sidecar public header includes gRPC"
#endif

#undef check

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer <game-sidecar> <config.toml>\n");
    return 2;
  }
  game_sidecar::SidecarOptions options;
  options.executable = argv[1];
  options.args = {"serve", "--config", argv[2]};
  options.handshake_timeout = std::chrono::seconds(30);
  game_sidecar::LaunchError error;
  auto process = game_sidecar::SidecarProcess::Launch(options, &error);
  if (!process) {
    std::fprintf(stderr, "%s\n", error.ToString().c_str());
    return 1;
  }
  game_sidecar::SidecarClient client(*process);
  sidecar::v1::OpenSessionRequest open;
  open.set_session_id("consumer");
  game_sidecar::Status st = client.OpenSession(open, nullptr);
  if (!st.ok()) {
    std::fprintf(stderr, "OpenSession: %s\n", st.ToString().c_str());
    return 1;
  }
  sidecar::v1::RunRequest run;
  run.set_session_id("consumer");
  run.mutable_narrate()->set_text("The gate opens.");
  game_sidecar::RunEventQueue queue;
  st = client.Run(run, queue.Sink());
  std::string text;
  queue.Drain([&](game_sidecar::RunUpdate& u) {
    if (u.kind == game_sidecar::RunEventKind::kText) text += u.text();
  });
  if (!st.ok() || text.empty()) {
    std::fprintf(stderr, "Run: %s (text \"%s\")\n", st.ToString().c_str(), text.c_str());
    return 1;
  }
  std::printf("consumer ok: sidecar %s narrated \"%s\"\n", process->handshake().version.c_str(), text.c_str());
  return 0;
}
