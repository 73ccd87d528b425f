// TrackedSession: a session handle that remembers the revision the sidecar
// last acknowledged, so a game sends each batch on top of it without carrying
// the number around; and that survives a supervised restart
// (SidecarOptions::restart): it is re-opened on the new process, and the batch
// the game sent but saw no acknowledgement for is resent under its delta ID, so
// it is applied exactly once or reported as not applied (ResumedSession in
// RestartOutcome::sessions), never dropped in silence and never applied twice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/sidecar_exit.h"
#include "game_sidecar/status.h"

namespace game_sidecar {

namespace internal {
class TrackerState;
}

// Safe from several threads (calls on one session are serialized). It shares
// the client's connection, so it may outlive the SidecarClient that opened it.
class TrackedSession {
 public:
  // Opens (creates or resumes) request.session_id and tracks it with the
  // client's process. Each batch without a delta ID gets "<prefix>-<n>"
  // (prefix: "<session_id>-<8 random hex digits>" when empty). nullptr with *status on failure.
  static std::unique_ptr<TrackedSession> Open(SidecarClient& client, const v1::OpenSessionRequest& request,
                                              Status* status, std::string delta_prefix = "");
  // Open without blocking (call_queue.h): `done` gets the status and the
  // session (nullptr on failure) inside a later queue.Drain().
  static CallHandle OpenAsync(SidecarClient& client, CallQueue& queue, v1::OpenSessionRequest request,
                              std::function<void(Status status, std::unique_ptr<TrackedSession> session)> done,
                              std::string delta_prefix = "");
  ~TrackedSession();
  TrackedSession(const TrackedSession&) = delete;
  TrackedSession& operator=(const TrackedSession&) = delete;

  const std::string& session_id() const;
  // The last revision the sidecar acknowledged for this handle.
  int64_t revision() const;
  // The delta ID of the batch sent without an acknowledgement ("" when none).
  std::string pending_delta_id() const;
  // The session was lost in a restart (the new process did not have it: no
  // --state-dir, or it was behind the acknowledged revision). Apply refuses
  // (FAILED_PRECONDITION) until ReplaceState resyncs it.
  bool lost() const;

  // Applies `ops` on top of revision() and advances it. delta_id "" = the next
  // "<prefix>-<n>". A batch left unacknowledged (the sidecar went away, or the
  // call failed without an answer) stays pending: the restart resends it, or
  // the next Apply does before its own batch, under the same delta ID. On
  // STALE_REVISION the revision moves to the sidecar's current one and nothing
  // was applied. A call while the sidecar is gone fails at once with
  // SIDECAR_GONE and sends nothing (the batch is not pending then).
  Status Apply(const std::vector<v1::DeltaOp>& ops, v1::ApplyDeltasResponse* response = nullptr,
               std::string delta_id = "");
  // Called when the batch left pending is settled, by a restart or by the next
  // Apply: kReplayed / kAppliedNow (it is applied, once) or kNotApplied (with
  // the reason; the game decides). Runs on the thread that settled it (the
  // process's supervisor thread after a restart, else the Apply caller's).
  // RestartOutcome::sessions reports the same for a restart.
  void on_pending(std::function<void(const ResumedSession&)> callback);
  // Apply without blocking: runs on `queue`'s worker in submission order, so
  // batches submitted one after the other go on top of each other's
  // revision; `done` gets the outcome inside a later queue.Drain(). A pending
  // batch settled by this call is reported to on_pending on the worker. The
  // TrackedSession may be destroyed first.
  CallHandle ApplyAsync(CallQueue& queue, std::vector<v1::DeltaOp> ops, ResponseCallback<v1::ApplyDeltasResponse> done,
                        std::string delta_id = "");

  // Replaces the whole state (the resync after a restart that lost the
  // session); the revision follows. Drops a pending batch (the snapshot wins).
  // A world over SidecarClient::kChunkBytes goes in pieces, as through the client.
  Status ReplaceState(v1::ReplaceStateRequest request, v1::ReplaceStateResponse* response = nullptr);
  CallHandle ReplaceStateAsync(CallQueue& queue, v1::ReplaceStateRequest request,
                               ResponseCallback<v1::ReplaceStateResponse> done);

 private:
  explicit TrackedSession(std::shared_ptr<internal::TrackerState> state);
  std::shared_ptr<internal::TrackerState> state_;
};

}  // namespace game_sidecar
