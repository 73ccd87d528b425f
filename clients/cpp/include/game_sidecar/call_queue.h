// CallQueue: calls that do not block the game thread. The blocking part of a
// call (the gRPC round trip, the spawn and handshake of a Launch, the graces of
// a Stop) runs on the queue's own worker thread; its result waits in the queue
// until the game thread calls Drain(), which hands it to that call's own
// callback. So a game thread pays one Submit (a lock and a push) and one Drain
// per frame, never a round trip; it reads like RunEventQueue for runs and like
// game_sidecar_drain in the C API.
//
// The non-blocking forms of the API use it: SidecarClient::*Async,
// RunHandle::CancelOnServerAsync, SidecarProcess::LaunchAsync / StopAsync and
// TrackedSession::OpenAsync / ApplyAsync / ReplaceStateAsync. Each takes the
// queue and a callback and returns a CallHandle:
//
//   CallQueue calls;                           // one per game (or per subsystem)
//   client.ApplyDeltasAsync(calls, batch, [this](Status st, v1::ApplyDeltasResponse r) {
//     if (st.ok()) revision_ = r.revision();   // on the game thread, inside Drain
//   });
//   ...
//   calls.Drain();                             // once per frame, on the game thread
//
// Ordering: ONE worker per queue runs the calls in the order they were
// submitted, one at a time, and results are delivered in the order they
// finished, which is the same order. Two ApplyDeltasAsync on one queue are
// applied in that order; an OpenSessionAsync submitted after a LaunchAsync's
// result was drained goes to that sidecar. The flip side: a call on a hung
// sidecar holds up the calls queued behind it (until the supervised process
// declares it gone, within hang_timeout plus a liveness interval, or the call's
// deadline), so give independent streams of work their own queues.
//
// Lifetimes: a call holds what it needs (the client's shared connection, a
// tracked session's state, a process given to StopAsync), so the SidecarClient
// or TrackedSession that started it may be destroyed before it runs. Those
// references are released on the worker thread once the call has run, never on
// one of gRPC's threads (destroying the last channel there makes gRPC join
// that very thread: grpc/grpc#37858). A result is destroyed on the thread that
// drains it, after its callback; a result never delivered (a forgotten call,
// a destroyed queue) is destroyed on the worker, so a launched SidecarProcess
// that no callback received is stopped there, not on the game thread.
//
// Destroying the queue drops every call not started yet and every result not
// delivered (no callback runs, not even later) and returns at once: it does
// not wait for the call in flight. The worker finishes that one call (at most
// its deadline, a Launch's handshake_timeout or a Stop's graces), destroys the
// dropped calls and results (stopping any sidecar among them), and exits,
// freeing everything. A program that exits before then ends the worker with
// itself.
//
// Threads: Submit, Cancel and pending() from any thread; Drain from one thread
// at a time (the game thread). A callback may submit calls, cancel calls and
// destroy clients, sessions and processes; it must not destroy the queue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

namespace game_sidecar {

namespace internal {
class CallQueueCore;

// One call, type-erased. Move-only, so results such as a
// std::unique_ptr<SidecarProcess> travel without copies; virtual calls only (no RTTI).
class QueuedCall {
 public:
  virtual ~QueuedCall() = default;
  // On the worker: the blocking part. Releases what it needed before it returns.
  // False when there is nothing to deliver.
  virtual bool Run() = 0;
  // On the draining thread: hands the result to the callback.
  virtual void Deliver() = 0;
};

template <class Work, class Done, class Result>
class QueuedCallOf final : public QueuedCall {
 public:
  QueuedCallOf(Work work, Done done) : work_(std::move(work)), done_(std::move(done)) {}
  bool Run() override {
    result_.emplace((*work_)());
    work_.reset();  // its references (the connection) go here, on the worker
    return true;
  }
  void Deliver() override { done_(std::move(*result_)); }

 private:
  std::optional<Work> work_;
  Done done_;
  std::optional<Result> result_;
};

// Work with no result to deliver (the C API parks handle destruction here).
template <class Work>
class QueuedJob final : public QueuedCall {
 public:
  explicit QueuedJob(Work work) : work_(std::move(work)) {}
  bool Run() override {
    work_();
    return false;
  }
  void Deliver() override {}

 private:
  Work work_;
};

// A result made elsewhere (a gRPC callback thread), delivered by the next Drain.
template <class Fn>
class PostedResult final : public QueuedCall {
 public:
  explicit PostedResult(Fn deliver) : deliver_(std::move(deliver)) {}
  bool Run() override { return true; }
  void Deliver() override { deliver_(); }

 private:
  Fn deliver_;
};
}  // namespace internal

// A call submitted to a CallQueue. Copyable and cheap; it stays valid (and
// harmless) after the call ended or the queue was destroyed.
class CallHandle {
 public:
  CallHandle() = default;
  // The call's ID: unique within its queue, never 0 for a submitted call.
  uint64_t id() const { return id_; }
  // True while the callback has neither run nor been cancelled (the call may
  // be queued, in flight, or finished and waiting for a Drain).
  bool pending() const;
  // Forgets the call: its callback will never run. A call not started yet is
  // not made at all; one in flight runs to its end (it may already be on the
  // wire: a cancelled ApplyDeltas may still have been applied) and its result
  // is dropped. What it holds is destroyed on the worker (a process given to
  // StopAsync is stopped all the same; a process a LaunchAsync made is stopped).
  // True when the callback was still pending; false when it had run already,
  // was cancelled before, or its queue is gone. From any thread, also from a
  // callback inside Drain (a result taken into that very Drain is then skipped).
  bool Cancel();

 private:
  friend class CallQueue;
  CallHandle(std::weak_ptr<internal::CallQueueCore> core, uint64_t id) : core_(std::move(core)), id_(id) {}
  std::weak_ptr<internal::CallQueueCore> core_;
  uint64_t id_ = 0;
};

class CallQueue {
 public:
  CallQueue();
  // Returns at once: see "Destroying the queue" above.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  // Hands every result that is ready (up to `max`) to its call's callback, on
  // this thread, in the order the calls finished. Results that become ready
  // while it runs wait for the next Drain, so one Drain is bounded by the
  // callbacks it runs. Returns how many callbacks ran.
  size_t Drain(size_t max = SIZE_MAX);
  // Blocks up to `timeout` until a result is ready; true if one is (tools and
  // tests; never on a game thread).
  bool WaitReady(std::chrono::milliseconds timeout);
  // Calls submitted whose callback has not run and was not cancelled.
  size_t pending() const;

  // The building block of the *Async forms, for any blocking work of the
  // game's own: `work()` runs on the worker after every call submitted before
  // it, and `done(result)` runs inside a later Drain. `work` returns the result
  // by value (move-only types are fine); `done` takes it.
  template <class Work, class Done>
  CallHandle Submit(Work work, Done done) {
    using Result = decltype(work());
    return Enqueue(std::unique_ptr<internal::QueuedCall>(
        new internal::QueuedCallOf<Work, Done, Result>(std::move(work), std::move(done))));
  }
  // Work with no callback, in order with the calls (e.g. destroying something
  // whose destructor waits, off the game thread).
  template <class Work>
  void Run(Work work) {
    Enqueue(std::unique_ptr<internal::QueuedCall>(new internal::QueuedJob<Work>(std::move(work))));
  }
  // Queues `deliver` for the next Drain without any work: how a result found
  // on another thread (a run's event, a process's exit) reaches the draining
  // thread in one order with the calls' results. Dropped once the queue is closed.
  template <class Fn>
  void Post(Fn deliver) {
    PostReady(std::unique_ptr<internal::QueuedCall>(new internal::PostedResult<Fn>(std::move(deliver))));
  }

  // Drops what is not started or not delivered (no callback runs any more) and
  // WAITS for the call in flight to end and the dropped ones to be destroyed.
  // For shutdown code that must know the worker is idle before it frees what
  // the calls point at (the C API's game_sidecar_destroy); the destructor does
  // the same without the wait. Submit and Post do nothing afterwards.
  void Close();

 private:
  CallHandle Enqueue(std::unique_ptr<internal::QueuedCall> call);
  void PostReady(std::unique_ptr<internal::QueuedCall> call);

  std::shared_ptr<internal::CallQueueCore> core_;
  std::thread worker_;
};

}  // namespace game_sidecar
