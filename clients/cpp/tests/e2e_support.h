// Helpers for tests against the real sidecar: launch it, build a small scene.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/sidecar_process.h"
#include "test_support.h"

namespace e2e {

namespace v1 = ::sidecar::v1;

// A launched sidecar plus a connected client; stderr goes to the test log on failure.
struct Sidecar {
  std::unique_ptr<game_sidecar::SidecarProcess> process;
  std::unique_ptr<game_sidecar::SidecarClient> client;
};

inline Sidecar Launch(game_sidecar::SidecarOptions options = testing_support::RealOptions()) {
  Sidecar s;
  game_sidecar::LaunchError err;
  s.process = game_sidecar::SidecarProcess::Launch(std::move(options), &err);
  if (!s.process) {
    ADD_FAILURE() << err.ToString();
    return s;
  }
  s.client = std::make_unique<game_sidecar::SidecarClient>(*s.process);
  return s;
}

inline v1::DeltaOp Upsert(const std::string& id, v1::EntityKind kind, const std::string& name,
                          const std::string& location = "") {
  v1::DeltaOp op;
  auto* e = op.mutable_upsert_entity()->mutable_entity();
  e->set_id(id);
  e->set_kind(kind);
  e->set_name(name);
  e->set_location_id(location);
  return op;
}

// Opens `session_id` and applies a gate scene at revision 1.
inline void OpenScene(game_sidecar::SidecarClient& client, const std::string& session_id) {
  v1::OpenSessionRequest open;
  open.set_session_id(session_id);
  v1::OpenSessionResponse opened;
  auto st = client.OpenSession(open, &opened);
  ASSERT_TRUE(st.ok()) << st.ToString();
  v1::ApplyDeltasRequest req;
  req.set_session_id(session_id);
  req.set_base_revision(opened.revision());
  req.set_delta_id(session_id + "-scene");
  *req.add_ops() = Upsert("level/gate", v1::ENTITY_KIND_LOCATION, "the north gate");
  *req.add_ops() = Upsert("BP_Guard_C_7", v1::ENTITY_KIND_CHARACTER, "Captain Hale", "level/gate");
  *req.add_ops() = Upsert("BP_Player_C_0", v1::ENTITY_KIND_PLAYER, "Wren", "level/gate");
  v1::ApplyDeltasResponse applied;
  st = client.ApplyDeltas(req, &applied);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

inline v1::RunRequest Narrate(const std::string& session_id, const std::string& text,
                              const std::string& profile = "") {
  v1::RunRequest req;
  req.set_session_id(session_id);
  req.mutable_narrate()->set_text(text);
  req.mutable_narrate()->add_entity_ids("BP_Player_C_0");
  req.mutable_narrate()->add_entity_ids("level/gate");
  req.set_profile(profile);
  return req;
}

}  // namespace e2e
