// TrackedSession: a session handle that remembers the revision the sidecar
// last acknowledged, so a game sends each batch on top of it without carrying
// the number around; and that keeps the game's writes across a supervised
// restart (SidecarOptions::restart). It is re-opened on the new process, the
// batch the game sent but saw no acknowledgement for is resent under its delta
// ID, and the writes made while the sidecar was gone are sent after it, in
// order: each is applied exactly once or reported as not applied (on_pending,
// ResumedSession in RestartOutcome::sessions), never dropped in silence and
// never applied twice. The contract, the same in every client:
// docs/protocol.md §1, "Tracked writes across a restart".
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
  // Writes held while the sidecar is gone (besides the one in flight); past it
  // Apply answers WRITE_NOT_APPLIED at once and the held ones stay. A game
  // writing every 2 ms fills it in 8 s; a restart takes 1-2 s.
  static constexpr size_t kMaxHeld = 4096;

  // Opens (creates or resumes) request.session_id and tracks it with the
  // client's process. Each batch without a delta ID gets "<prefix>-<n>"
  // (prefix: "<session_id>-<8 random hex digits>" when empty). nullptr with *status on failure.
  // One tracked state per session: opening a session this client's connection
  // tracks already returns a handle on that same state (its revision, its
  // pending and held writes; no call is made, `delta_prefix` is the first one's).
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
  // How many writes are held for the restart (Apply answered WRITE_KEPT).
  size_t held_count() const;
  // The bound on held writes (kMaxHeld unless set).
  void set_max_held(size_t max_held);
  // The session was lost in a restart (the new process did not have it: no
  // --state-dir, or it was behind the acknowledged revision). Apply refuses
  // (FAILED_PRECONDITION) until ReplaceState resyncs it.
  bool lost() const;

  // Applies `ops` on top of revision() and advances it (never back: a replayed
  // batch answers the revision it produced then). delta_id "" = the next
  // "<prefix>-<n>". What the game does with each outcome:
  //  - ok(): acknowledged.
  //  - write_kept() (reason WRITE_KEPT, also sidecar_gone()): kept. The sidecar
  //    died with it in flight (pending_delta_id()), or it was written while the
  //    sidecar was gone or restarting (held, in order, at most kMaxHeld). The
  //    restart resends the pending batch under its delta ID, then sends the held
  //    ones, and reports each to on_pending. Carry on; never send it again.
  //  - write_not_applied() (WRITE_NOT_APPLIED): not in the session, and it will
  //    not be sent: no restart follows, the session was lost, or the held queue
  //    is full. The game decides.
  //  - the sidecar's refusal: nothing applied; on STALE_REVISION the revision
  //    moves to the sidecar's current one.
  //  - SIDECAR_GONE without sidecar_will_restart: the sidecar died with it in
  //    flight and no restart follows; whether it was applied is unknown. It
  //    stays pending (resend it under its delta ID to a sidecar on the same
  //    --state-dir to learn which).
  // A batch left unanswered while the sidecar is up (a cancel, a deadline)
  // stays pending too: the next Apply resends it first, under its delta ID.
  Status Apply(const std::vector<v1::DeltaOp>& ops, v1::ApplyDeltasResponse* response = nullptr,
               std::string delta_id = "");
  // Called when a kept batch is settled, by a restart or by the next Apply:
  // kReplayed / kAppliedNow (it is applied, once) or kNotApplied (with the
  // reason; the game decides), for the pending batch and for each held one
  // (pending_delta_id names it). Runs on the thread that settled it (the
  // process's supervisor thread after a restart, else the Apply caller's): it
  // must not call Apply itself (post to the game thread instead).
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
