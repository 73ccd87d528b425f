// narrate_example: launches the sidecar like a game would, opens a session,
// sends a scene, runs a narration and prints tokens as they arrive, drained
// from a queue by a "game loop" the way a game thread would.
//
//   narrate_example [--sidecar PATH] [--config FILE.toml] [TEXT...]
//
// PATH defaults to $GAME_SIDECAR_EXE, then `game-sidecar` in PATH. Without
// --config the sidecar serves its embedded local model.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/sidecar_process.h"

namespace v1 = sidecar::v1;
using namespace game_sidecar;

static v1::DeltaOp Entity(const char* id, v1::EntityKind kind, const char* name, const char* desc,
                          const char* location) {
  v1::DeltaOp op;
  auto* e = op.mutable_upsert_entity()->mutable_entity();
  e->set_id(id);
  e->set_kind(kind);
  e->set_name(name);
  e->set_description(desc);
  e->set_location_id(location);
  return op;
}

int main(int argc, char** argv) {
  SidecarOptions options;
  if (const char* env = std::getenv("GAME_SIDECAR_EXE")) options.executable = env;
  std::string text;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sidecar") && i + 1 < argc) {
      options.executable = argv[++i];
    } else if (!std::strcmp(argv[i], "--config") && i + 1 < argc) {
      options.args.push_back("--config");
      options.args.push_back(argv[++i]);
    } else {
      text += (text.empty() ? "" : " ") + std::string(argv[i]);
    }
  }
  if (text.empty()) text = "Wren pushes the north gate open and steps into the storm.";
  options.handshake_timeout = std::chrono::seconds(30);
  // The sidecar's JSON log lines; a game would hand these to its own logger.
  options.on_log = [](const std::string& line) {
    if (std::getenv("NARRATE_VERBOSE")) std::fprintf(stderr, "[sidecar] %s\n", line.c_str());
  };

  LaunchError error;
  auto sidecar = SidecarProcess::Launch(options, &error);
  if (!sidecar) {
    std::fprintf(stderr, "%s\n", error.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "sidecar %s up: pid %d at %s\n", sidecar->handshake().version.c_str(), sidecar->pid(),
               sidecar->target().c_str());
  SidecarClient client(*sidecar);

  v1::OpenSessionRequest open;
  open.set_session_id("example");
  v1::OpenSessionResponse opened;
  Status st = client.OpenSession(open, &opened);
  if (!st.ok()) {
    std::fprintf(stderr, "OpenSession: %s\n", st.ToString().c_str());
    return 1;
  }

  v1::ApplyDeltasRequest scene;
  scene.set_session_id("example");
  scene.set_base_revision(opened.revision());
  scene.set_delta_id("scene-1");
  *scene.add_ops() = Entity("level/gate", v1::ENTITY_KIND_LOCATION, "the north gate",
                            "A weathered stone gate in a high wall.", "");
  *scene.add_ops() = Entity("BP_Guard_C_7", v1::ENTITY_KIND_CHARACTER, "Captain Hale",
                            "A tired guard captain in a rain-soaked cloak.", "level/gate");
  *scene.add_ops() = Entity("BP_Player_C_0", v1::ENTITY_KIND_PLAYER, "Wren", "A young courier.", "level/gate");
  auto* weather = scene.add_ops()->mutable_set_scene_fact();
  weather->set_key("weather");
  weather->mutable_value()->set_string_value("a rising storm");
  v1::ApplyDeltasResponse applied;
  st = client.ApplyDeltas(scene, &applied);
  if (!st.ok()) {
    std::fprintf(stderr, "ApplyDeltas: %s\n", st.ToString().c_str());
    return 1;
  }

  v1::RunRequest run;
  run.set_session_id("example");
  run.mutable_narrate()->set_text(text);
  run.mutable_narrate()->add_entity_ids("BP_Player_C_0");
  run.mutable_narrate()->add_entity_ids("level/gate");
  run.set_min_revision(applied.revision());

  RunEventQueue queue;
  auto handle = client.StartRun(run, queue.Sink());
  // The "game loop": one drain per frame; every event is handled on this thread.
  bool done = false;
  int exit_code = 0;
  while (!done) {
    queue.Drain([&](RunUpdate& u) {
      switch (u.kind) {
        case RunEventKind::kStarted:
          std::fprintf(stderr, "run %s on %s\n", u.run_id.c_str(), u.event.started().model().c_str());
          break;
        case RunEventKind::kText:
          std::fputs(u.text().c_str(), stdout);
          if (u.sentence_end()) std::fflush(stdout);  // where a TTS would speak a sentence
          break;
        case RunEventKind::kUsage:
          std::fprintf(stderr, "\n[usage: %lld prompt + %lld completion tokens]\n",
                       static_cast<long long>(u.event.usage().prompt_tokens()),
                       static_cast<long long>(u.event.usage().completion_tokens()));
          break;
        case RunEventKind::kFinished:
          std::fprintf(stderr, "[finished: first token %.0f ms, total %.0f ms]\n",
                       u.event.finished().timings().first_token_ms(), u.event.finished().timings().total_ms());
          done = true;
          break;
        case RunEventKind::kError:
          std::fprintf(stderr, "\n[run failed: %s]\n", u.error.ToString().c_str());
          exit_code = 1;
          done = true;
          break;
        default:
          break;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(16));  // ~60 fps
  }
  std::fputc('\n', stdout);
  handle->Wait();
  return exit_code;  // ~SidecarProcess closes stdin; the sidecar exits in order
}
