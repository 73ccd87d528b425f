// RunCall: one Run stream on gRPC's callback API. No thread per run: gRPC's
// callback threads deliver the events. The call holds its Connection (channel
// and stub), so it does not depend on the SidecarClient staying alive.
//
// Who frees it: only the RunHandle, on the caller's thread, after OnDone (the
// handle's destructor cancels and waits). Never a gRPC thread: destroying the
// last channel on a gRPC callback thread makes gRPC join that very thread
// (grpc/grpc#37858), so the call must not hold a reference to itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "connection.h"
#include "game_sidecar/run.h"

namespace game_sidecar {
namespace internal {

class RunCall final : public grpc::ClientReadReactor<v1::RunResponse> {
 public:
  // Starts the call without blocking; request.run_id must be set. The caller
  // must keep the result until Wait() has returned (RunHandle does).
  static std::shared_ptr<RunCall> Start(std::shared_ptr<Connection> connection, v1::RunRequest request,
                                        RunCallback callback);

  void Cancel();
  Status CancelOnServer();
  Status Wait();
  bool WaitFor(std::chrono::milliseconds timeout, Status* final_status);
  bool Done() const;
  // For CancelOnServerAsync, which must not hold the call itself.
  const std::shared_ptr<Connection>& connection() const { return connection_; }

  // grpc::ClientReadReactor. gRPC never runs two of them at once for one call,
  // and OnDone comes after the last OnReadDone has returned.
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  RunCall(std::shared_ptr<Connection> connection, v1::RunRequest request, RunCallback callback);

  // The run's final status: the error callback, then waiters wake up.
  void Complete(Status status);

  // Declared first, destroyed last: the stub behind context_ lives in link_.
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<Link> link_;  // null when the sidecar was gone at the start
  v1::RunRequest request_;
  RunCallback callback_;
  grpc::ClientContext context_;
  v1::RunResponse response_;
  bool finished_ = false;  // a `finished` event arrived; only the reactor methods touch it
  std::atomic<bool> cancelled_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // OnDone has run its last callback; the call may be freed
  Status final_;
};

}  // namespace internal
}  // namespace game_sidecar
