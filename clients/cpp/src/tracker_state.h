// TrackerState: what a TrackedSession knows (the acknowledged revision, the
// unacknowledged batch), shared with its Connection so the supervising
// SidecarProcess can re-open the session after a restart. Internal header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "connection.h"
#include "game_sidecar/sidecar_exit.h"

namespace game_sidecar {
namespace internal {

class TrackerState {
 public:
  TrackerState(std::shared_ptr<Connection> connection, v1::OpenSessionRequest open, int64_t revision,
               std::string prefix);

  const std::string& session_id() const { return open_.session_id(); }
  int64_t revision() const;
  std::string pending_delta_id() const;
  bool lost() const;

  Status Apply(v1::ApplyDeltasRequest request, v1::ApplyDeltasResponse* response);
  Status ReplaceState(v1::ReplaceStateRequest request, v1::ReplaceStateResponse* response);
  // After a restart (supervisor thread): re-open, then resend the pending batch.
  ResumedSession Resume();
  void SetOnPending(std::function<void(const ResumedSession&)> callback);

 private:
  // Under call_mu_: resends the pending batch under its delta ID on top of
  // the acknowledged revision. Clears it unless the sidecar is gone again.
  ResumedSession::Pending ResendPending(Status* status);
  ResumedSession::Pending ResendPendingOnce(Status* status);
  // Tells the game what became of a pending batch (on_pending).
  void Report(const ResumedSession& settled);
  void Acknowledge(int64_t revision);

  std::shared_ptr<Connection> connection_;
  const v1::OpenSessionRequest open_;
  const std::string prefix_;
  std::mutex call_mu_;  // one call at a time: Apply, ReplaceState, Resume
  mutable std::mutex mu_;
  int64_t revision_;
  uint64_t next_id_ = 1;
  std::optional<v1::ApplyDeltasRequest> pending_;
  bool lost_ = false;  // lost in a restart: refused until ReplaceState
  std::function<void(const ResumedSession&)> on_pending_;
  std::string last_resent_id_;  // under call_mu_
};

}  // namespace internal
}  // namespace game_sidecar
