// LivenessProbe: one GetInfo at a time with a deadline, reported by callback.
#include "liveness_probe.h"

namespace game_sidecar {
namespace internal {

LivenessProbe::LivenessProbe(const std::string& target, const std::string& token, const ClientOptions& options)
    : token_(token), link_(std::make_shared<Link>(target, options, 0)) {}

LivenessProbe::~LivenessProbe() {
  std::unique_lock<std::mutex> lock(mu_);
  if (in_flight_) call_->context.TryCancel();
  cv_.wait(lock, [this] { return !in_flight_; });
}

void LivenessProbe::Start(std::chrono::milliseconds timeout, Done done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_) return;
  in_flight_ = true;
  call_ = std::make_unique<Call>();
  call_->context.AddMetadata("authorization", "Bearer " + token_);
  call_->context.set_deadline(std::chrono::system_clock::now() + timeout);
  Clock::time_point started = Clock::now();
  link_->sidecar->async()->GetInfo(
      &call_->context, &call_->request, &call_->response, [this, started, done](grpc::Status status) {
        bool timed_out = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
        bool answered = !timed_out && status.error_code() != grpc::StatusCode::UNAVAILABLE &&
                        status.error_code() != grpc::StatusCode::CANCELLED;
        done(answered, timed_out, started);
        std::lock_guard<std::mutex> lock(mu_);
        in_flight_ = false;
        cv_.notify_all();  // under the lock: the destructor may free this object right after
      });
}

Status LivenessProbe::GetInfo(std::chrono::milliseconds timeout, v1::GetInfoResponse* response) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token_);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  return StatusFromCall(link_->sidecar->GetInfo(&context, v1::GetInfoRequest(), response), context);
}

}  // namespace internal
}  // namespace game_sidecar
