// TrackerState: what a TrackedSession knows (the acknowledged revision, the
// unacknowledged batch), shared with its Connection so the supervising
// SidecarProcess can re-open the session after a restart. Internal header.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
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

  size_t held_count() const;
  void set_max_held(size_t max_held);

  Status Apply(v1::ApplyDeltasRequest request, v1::ApplyDeltasResponse* response);
  Status ReplaceState(v1::ReplaceStateRequest request, v1::ReplaceStateResponse* response);
  // After a restart (supervisor thread): re-open, resend the pending batch, send the held ones.
  ResumedSession Resume();
  // Sends what was held while other sessions resumed; appends to `held`.
  void Flush(std::vector<ResumedSession::Held>* held);
  // No restart follows, or the session was lost: every held write fails
  // (WRITE_NOT_APPLIED saying `why`), each reported to on_pending.
  void FailHeld(const std::string& why, const std::shared_ptr<const SidecarExit>& exit);
  // The last part of a restart (sidecar_supervisor.cpp): with the gate closed,
  // an Apply waits instead of being held, so the last held writes are sent
  // without more coming in behind them (a game writing faster than they are
  // sent would otherwise keep the restart from ever finishing); the gate opens
  // once the new process is published.
  void SetGate(bool closed);
  void SetOnPending(std::function<void(const ResumedSession&)> callback);

 private:
  struct Held {
    v1::ApplyDeltasRequest request;
    uint64_t order;  // the order the game wrote it in
  };
  // Under mu_: keep `request` for the restart (WRITE_KEPT), or say it cannot be
  // (WRITE_NOT_APPLIED). `gone` is the connection's SIDECAR_GONE status.
  Status HoldLocked(v1::ApplyDeltasRequest request, uint64_t order, const Status& gone);
  Status NotApplied(const std::string& delta_id, const std::string& why,
                    std::shared_ptr<const SidecarExit> exit) const;
  // Under call_mu_: sends the first `count` held writes in order, each on top of the last.
  void FlushHeld(std::vector<ResumedSession::Held>* held, size_t count);
  // Under mu_: STALE_REVISION carries the session's revision: follow it.
  void FollowStaleLocked(const Status& st);
  // Waits (bounded) until no Apply that began before the exit is still between
  // its start and its send-or-hold: they are earlier than anything held.
  void WaitForLine();
  Status LostStatus() const;
  // Under call_mu_: resends the pending batch under its delta ID on top of
  // the acknowledged revision. Clears it unless the sidecar is gone again.
  ResumedSession::Pending ResendPending(Status* status);
  ResumedSession::Pending ResendPendingOnce(Status* status);
  // Tells the game what became of a pending batch (on_pending).
  void Report(const ResumedSession& settled);
  // An acknowledged batch: the revision moves forward only (a replay answers an older one).
  void Acknowledge(int64_t revision);

  std::shared_ptr<Connection> connection_;
  const v1::OpenSessionRequest open_;
  const std::string prefix_;
  std::mutex call_mu_;  // one call at a time: Apply, ReplaceState, Resume
  mutable std::mutex mu_;
  int64_t revision_;
  uint64_t next_id_ = 1;
  std::optional<v1::ApplyDeltasRequest> pending_;
  std::deque<Held> held_;  // written while the sidecar was gone, by order
  uint64_t next_order_ = 0;
  int in_line_ = 0;  // Applies past their first look, not yet sent or held
  bool gate_closed_ = false;
  std::condition_variable line_cv_;
  size_t max_held_;
  bool lost_ = false;  // lost in a restart: refused until ReplaceState
  std::function<void(const ResumedSession&)> on_pending_;
  std::string last_resent_id_;  // under call_mu_
};

}  // namespace internal
}  // namespace game_sidecar
