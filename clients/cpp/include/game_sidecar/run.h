// Streamed runs: the events a game sees, the handle that owns a running call,
// and a thread-safe queue that hands events to a game thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "game_sidecar/status.h"
#include "sidecar/v1/agent_service.grpc.pb.h"

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

// Called on the run's own reader thread, in stream order. Must not block for
// long and must not destroy the RunHandle it belongs to.
using RunCallback = std::function<void(const RunUpdate&)>;

// A thread-safe FIFO of RunUpdates. Runs push from their reader threads; the
// game thread drains it once per frame, so game objects are only touched there.
class RunEventQueue {
 public:
  void Push(RunUpdate update);
  // Hands every queued update (up to `max`) to `fn` on the calling thread, in
  // order, without holding the lock while `fn` runs. Returns how many.
  size_t Drain(const std::function<void(RunUpdate&)>& fn, size_t max = SIZE_MAX);
  bool TryPop(RunUpdate* out);
  // Blocks up to `timeout` for the next update (tools and tests; never on a game thread).
  bool WaitPop(RunUpdate* out, std::chrono::milliseconds timeout);
  size_t size() const;
  // A RunCallback that pushes into this queue. The queue must outlive every
  // RunHandle using it (RunHandle's destructor joins its reader thread).
  RunCallback Sink();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RunUpdate> items_;
};

class SidecarClient;

// A run in flight. Destroying it cancels the call if it is still running and
// waits for the reader thread.
class RunHandle {
 public:
  ~RunHandle();
  RunHandle(const RunHandle&) = delete;
  RunHandle& operator=(const RunHandle&) = delete;

  // The run's ID (the request's, or one the client made up), known before `started`.
  const std::string& run_id() const { return run_id_; }
  // Cancels the call from this side (ClientContext::TryCancel): the stream ends
  // at once with kError CANCELLED / RUN_CANCELLED, and the sidecar stops the
  // model call upstream. Safe from any thread, any number of times.
  void Cancel();
  // Asks the sidecar to cancel by run ID (AgentService.CancelRun); the stream
  // then ends with the sidecar's CANCELLED status. NOT_FOUND / RUN_NOT_FOUND
  // when the run is no longer running.
  Status CancelOnServer();
  // Blocks until the stream has ended; returns its final status (OK after kFinished).
  // One waiting thread at a time; never from inside the run's own callback.
  Status Wait();
  // True once the final kFinished/kError callback has returned.
  bool Done() const { return done_.load(); }

 private:
  friend class SidecarClient;
  RunHandle(SidecarClient* client, std::string run_id);
  void Read(std::unique_ptr<grpc::ClientReader<sidecar::v1::RunResponse>> reader, RunCallback callback);

  SidecarClient* client_;
  std::string run_id_;
  grpc::ClientContext context_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  Status final_;
  std::thread thread_;
};

}  // namespace game_sidecar
