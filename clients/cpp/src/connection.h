// The connection a SidecarClient, its runs, delta streams and tracked sessions
// share: the token, the options, and the current Link (channel + stubs). Shared
// ownership is what lets a run outlive the client that started it.
//
// When the client was made from a SidecarProcess, the process supervises the
// connection (SidecarProcess::Attach): at an exit it marks the connection gone,
// which cancels every call in flight and fails every new one at once with
// SIDECAR_GONE; after a restart it swaps in a Link to the new process, so code
// holding the client keeps working.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/sidecar_exit.h"
#include "game_sidecar/v1/agent_service.grpc.pb.h"
#include "game_sidecar/v1/session_service.grpc.pb.h"
#include "game_sidecar/v1/sidecar_service.grpc.pb.h"
#include "grpc_status.h"

namespace game_sidecar {
namespace internal {

using Clock = std::chrono::steady_clock;
class TrackerState;

// True on a SidecarProcess's supervisor thread: the verdict comes from that
// thread, so its own calls (re-opening tracked sessions) never wait for one.
extern thread_local bool t_supervisor_thread;

// One channel to one sidecar process. A call keeps the Link it started on (the
// stub behind its context lives here); a restart makes a new one.
struct Link {
  Link(std::string target, const ClientOptions& options, uint64_t generation);
  std::string target;
  uint64_t generation;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::SidecarService::Stub> sidecar;
  std::unique_ptr<v1::SessionService::Stub> sessions;
  std::unique_ptr<v1::AgentService::Stub> agent;
};

// SIDECAR_GONE for a call to `endpoint` after `exit`.
Status GoneStatus(const std::shared_ptr<const SidecarExit>& exit, const std::string& endpoint, bool restarting);

class Connection {
 public:
  Connection(const std::string& target, std::string token, ClientOptions options);

  // Starts a call: sets the token (and, for unary calls, the deadline) on
  // `context` and registers it, so an exit cancels it. Returns the Link to call
  // on, or nullptr with *gone set when the sidecar is gone (nothing was sent).
  std::shared_ptr<Link> Acquire(grpc::ClientContext* context, bool unary, Status* gone);
  // Ends a call: unregisters `context` (call before destroying it).
  void Release(grpc::ClientContext* context);

  // The status a caller sees for a call on `link` that ended with `status`:
  // SIDECAR_GONE when the process behind the link is gone. A failure that
  // looks like a lost connection (UNAVAILABLE, DEADLINE_EXCEEDED, a cancel
  // not made by the caller) on a supervised connection waits for the verdict
  // first: the exit, or a liveness answer after the failure (bounded).
  Status Settle(Status status, const Link& link, bool cancelled_by_caller);
  // The same for a callback: `done` runs now on this thread, or later on the
  // supervising SidecarProcess's thread once the verdict is in.
  void SettleLater(Status status, const Link& link, bool cancelled_by_caller, std::function<void(Status)> done);

  // One unary call with the token and deadline; `response` may be nullptr.
  template <class Stub, class Req, class Resp>
  Status Unary(std::unique_ptr<Stub> Link::*stub,
               grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& request,
               Resp* response, std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
    grpc::ClientContext context;
    Status gone;
    std::shared_ptr<Link> link = Acquire(&context, true, &gone);
    if (!link) return gone;
    if (timeout.count() >= 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
    Resp scratch;
    grpc::Status status = ((*(link.get()->*stub)).*method)(&context, request, response != nullptr ? response : &scratch);
    Release(&context);
    return Settle(StatusFromCall(status, context), *link, false);
  }

  // A client-streaming call that carries `data` (a serialized request) in
  // pieces of at most `piece_bytes`, in order (ReplaceStateChunked, ImportSessionChunked).
  template <class Stub, class Piece, class Resp>
  Status Upload(std::unique_ptr<Stub> Link::*stub,
                std::unique_ptr<grpc::ClientWriter<Piece>> (Stub::*method)(grpc::ClientContext*, Resp*),
                const std::string& data, size_t piece_bytes, Resp* response) {
    grpc::ClientContext context;
    Status gone;
    std::shared_ptr<Link> link = Acquire(&context, true, &gone);
    if (!link) return gone;
    std::unique_ptr<grpc::ClientWriter<Piece>> writer = ((*(link.get()->*stub)).*method)(&context, response);
    Piece piece;
    for (size_t at = 0; at < data.size(); at += piece_bytes) {
      piece.set_data(data.data() + at, std::min(piece_bytes, data.size() - at));
      if (!writer->Write(piece)) break;  // the call has ended: Finish says why
    }
    writer->WritesDone();
    grpc::Status status = writer->Finish();
    Release(&context);
    return Settle(StatusFromCall(status, context), *link, false);
  }

  // True with *gone set (SIDECAR_GONE) while the sidecar is gone.
  bool IsGone(Status* gone) const;
  // The current link (nullptr while gone); for WaitForConnected.
  std::shared_ptr<Link> link() const;
  std::string endpoint() const;
  const ClientOptions& options() const { return options_; }

  // --- supervision (SidecarProcess) ---
  // The connection is a supervised process's: failures wait for its verdict
  // (at most `verdict_limit`).
  void Supervise(std::chrono::milliseconds verdict_limit);
  // The process exited: cancel every call in flight, fail new ones, settle the waiting ones.
  void MarkGone(std::shared_ptr<const SidecarExit> exit, bool restarting);
  // The policy gave up or the game stopped it: new calls say so.
  void MarkFinal();
  // A restarted process serves at `target`: the supervisor thread's calls (the
  // tracked sessions' re-open) go there at once, the game's after Publish, so
  // no game call overtakes the re-open of its session.
  void Swap(const std::string& target);
  void Publish();
  // A liveness check that started at `when` was answered.
  void NoteAlive(Clock::time_point when);
  // Settles waiting callbacks whose verdict limit passed.
  void Sweep(Clock::time_point now);

  // The game asked this sidecar to shut down (a Shutdown call it answered):
  // its exit is a requested one.
  void NoteShutdownRequested();
  bool ShutdownRequested() const;

  // Tracked sessions re-opened after a restart (tracked_session.cpp). One per
  // session ID: AddTracker returns the one tracked already, if any, else `tracker`.
  std::shared_ptr<TrackerState> AddTracker(std::shared_ptr<TrackerState> tracker);
  std::shared_ptr<TrackerState> FindTracker(const std::string& session_id);
  std::vector<std::shared_ptr<TrackerState>> Trackers();

 private:
  struct Waiting {
    Status status;
    uint64_t generation;
    Clock::time_point failed_at;
    Clock::time_point limit;
    std::function<void(Status)> done;
  };
  // Under mu_: the verdict for a failure of `generation` at `failed_at`, if any.
  bool VerdictLocked(const Status& status, uint64_t generation, Clock::time_point failed_at, Status* out) const;
  bool LooksLost(const Status& status, bool cancelled_by_caller) const;

  const std::string token_;
  const ClientOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Link> link_;  // null while gone
  std::shared_ptr<Link> next_link_;  // swapped in, not yet published
  std::string endpoint_;        // the last target, for messages
  uint64_t generation_ = 1;
  bool supervised_ = false;
  std::chrono::milliseconds verdict_limit_{0};
  std::shared_ptr<const SidecarExit> exit_;  // the last exit
  uint64_t gone_generation_ = 0;             // links up to this one are gone
  bool restarting_ = false;
  Clock::time_point last_alive_{};
  std::set<grpc::ClientContext*> in_flight_;
  bool cancelling_ = false;  // MarkGone is cancelling the calls in flight
  std::thread::id canceller_;
  std::vector<Waiting> waiting_;
  std::vector<std::weak_ptr<TrackerState>> trackers_;
  uint64_t shutdown_generation_ = 0;  // the link a Shutdown call went to
};

}  // namespace internal
}  // namespace game_sidecar
