// Streamed runs: the events a game sees, the handle that owns a running call,
// and a thread-safe queue that hands events to a game thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "game_sidecar/call_queue.h"
#include "game_sidecar/status.h"
#include "game_sidecar/v1/agent_service.pb.h"

namespace game_sidecar {

enum class RunEventKind {
  kStarted,          // event.started(): profile, model, revision
  kText,             // event.text(): a text delta; sentence_end() marks a sentence end
  kAttemptRejected,  // event.rejected(): a decision reply was void, another attempt follows
  kAction,           // event.action(): the chosen action, engine IDs restored
  kNotes,            // event.notes()
  kUsage,            // event.usage(): tokens and cost
  kFinished,         // event.finished(): finish reason and timings; the last event of a good run
  kError,            // error: the run ended with this status; the last event of a failed run
};

const char* RunEventKindName(RunEventKind kind);

// One thing that happened to a run. Every run ends with exactly one kFinished or kError.
struct RunUpdate {
  RunEventKind kind = RunEventKind::kError;
  std::string run_id;
  uint64_t seq = 0;       // the sidecar's sequence number (0 for kError)
  sidecar::v1::RunEvent event;  // the wire event (empty for kError)
  Status error;           // for kError

  // For kText: the text and whether it ends a sentence ("" / false otherwise).
  const std::string& text() const { return event.text().text(); }
  bool sentence_end() const { return kind == RunEventKind::kText && event.text().sentence_end(); }
};

// Called on one of gRPC's callback threads (shared by all runs; never the
// caller's thread), one event at a time per run, in stream order. Must not
// block for long (it holds up other runs' events), must not Wait() on a run,
// and must not destroy a RunHandle, DeltaStream or SidecarClient (hand such work
// to your own thread: a RunEventQueue drained by the game thread does that).
using RunCallback = std::function<void(const RunUpdate&)>;

class RunHandle;

// A thread-safe FIFO of RunUpdates. Runs push from gRPC's callback threads;
// the game thread drains it once per frame, so game objects are only touched there.
class RunEventQueue {
 public:
  void Push(RunUpdate update);
  // Hands every queued update (up to `max`) to `fn` on the calling thread, in
  // order, without holding the lock while `fn` runs. Returns how many. An update
  // of a run cancelled through Cancel() is skipped even when it was queued, or
  // taken into this very drain, before the cancel (`fn` may cancel a run).
  size_t Drain(const std::function<void(RunUpdate&)>& fn, size_t max = SIZE_MAX);
  // Cancels `run` (RunHandle::Cancel) and drops every update of it this queue has
  // not delivered yet, or gets later: a game that clears its text when it cancels
  // never sees stale text land after a hitch. The run's end is still delivered,
  // once, as kError CANCELLED / RUN_CANCELLED (even when the run had finished
  // meanwhile). Call it on the thread that drains.
  void Cancel(RunHandle& run);
  bool TryPop(RunUpdate* out);
  // Blocks up to `timeout` for the next update (tools and tests; never on a game thread).
  bool WaitPop(RunUpdate* out, std::chrono::milliseconds timeout);
  size_t size() const;
  // A RunCallback that pushes into this queue. The queue must outlive every
  // RunHandle using it (RunHandle's destructor waits for the run's last callback).
  RunCallback Sink();

 private:
  bool Skip(RunUpdate& update);  // with mu_ held

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RunUpdate> items_;
  // Cancelled runs whose end this queue has not delivered yet.
  std::unordered_set<std::string> cancelled_;
  // Runs whose end was pushed and not delivered yet (queued, or in a drain's batch).
  std::unordered_set<std::string> undelivered_ends_;
};

class SidecarClient;
namespace internal {
class RunCall;
}

// A run in flight. It shares the client's connection (channel and stubs), so
// it stays valid after the SidecarClient that started it is destroyed.
// Destroying the handle cancels the call if it is still running and waits for
// its last callback, so no callback runs after the handle is gone.
class RunHandle {
 public:
  ~RunHandle();
  RunHandle(const RunHandle&) = delete;
  RunHandle& operator=(const RunHandle&) = delete;

  // The run's ID (the request's, or one the client made up), known before `started`.
  const std::string& run_id() const { return run_id_; }
  // Cancels the call from this side: the stream ends at once with kError
  // CANCELLED / RUN_CANCELLED, and the sidecar stops the model call upstream.
  // After kFinished it changes nothing: the run has had its one final event.
  // Safe from any thread, any number of times.
  void Cancel();
  // Asks the sidecar to cancel by run ID (AgentService.CancelRun); the stream
  // then ends with the sidecar's CANCELLED status. NOT_FOUND / RUN_NOT_FOUND
  // when the run is no longer running.
  Status CancelOnServer();
  // The same without blocking (call_queue.h): `done` gets the CancelRun status
  // inside a later queue.Drain(). The handle may be destroyed first.
  CallHandle CancelOnServerAsync(CallQueue& queue, std::function<void(Status status)> done);
  // Blocks until the stream has ended and its last callback returned; returns
  // the final status (OK after kFinished). Any number of threads may wait;
  // never from inside the run's own callback.
  Status Wait();
  // Like Wait, but gives up after `timeout`: false when the run is still going.
  bool WaitFor(std::chrono::milliseconds timeout, Status* final_status = nullptr);
  // True once the final kFinished/kError callback has returned.
  bool Done() const;

 private:
  friend class SidecarClient;
  RunHandle(std::shared_ptr<internal::RunCall> call, std::string run_id);

  std::shared_ptr<internal::RunCall> call_;
  std::string run_id_;
};

}  // namespace game_sidecar
