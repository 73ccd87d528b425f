// LivenessProbe: the cheap periodic check that a supervised sidecar still
// answers (SidecarService.GetInfo with a short deadline) on its own channel,
// through gRPC's callback API so the supervisor thread never blocks on it.
// Internal header.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "connection.h"

namespace game_sidecar {
namespace internal {

class LivenessProbe {
 public:
  // answered: the process replied (any status but DEADLINE_EXCEEDED / UNAVAILABLE);
  // timed_out: no reply within the deadline (a hang, not a refused connection).
  using Done = std::function<void(bool answered, bool timed_out, Clock::time_point started)>;

  LivenessProbe(const std::string& target, const std::string& token, const ClientOptions& options);
  // Cancels a check in flight and waits for its callback, so the channel is
  // released here and never on a gRPC thread (grpc/grpc#37858).
  ~LivenessProbe();

  // Starts one check unless one is in flight; `done` runs on a gRPC callback thread.
  void Start(std::chrono::milliseconds timeout, Done done);
  // A blocking GetInfo (the restart reads `durable` from it).
  Status GetInfo(std::chrono::milliseconds timeout, v1::GetInfoResponse* response);

 private:
  struct Call {
    grpc::ClientContext context;
    v1::GetInfoRequest request;
    v1::GetInfoResponse response;
  };
  const std::string token_;
  std::shared_ptr<Link> link_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool in_flight_ = false;
  std::unique_ptr<Call> call_;
};

}  // namespace internal
}  // namespace game_sidecar
