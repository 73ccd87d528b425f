// RunCall: reads a Run stream through gRPC's callback API and reports each event.
#include "run_call.h"

namespace game_sidecar {
namespace internal {
namespace {

bool KindOf(const v1::RunEvent& event, RunEventKind* kind) {
  using E = v1::RunEvent;
  switch (event.kind_case()) {
    case E::kStarted: *kind = RunEventKind::kStarted; return true;
    case E::kText: *kind = RunEventKind::kText; return true;
    case E::kRejected: *kind = RunEventKind::kAttemptRejected; return true;
    case E::kAction: *kind = RunEventKind::kAction; return true;
    case E::kNotes: *kind = RunEventKind::kNotes; return true;
    case E::kUsage: *kind = RunEventKind::kUsage; return true;
    case E::kFinished: *kind = RunEventKind::kFinished; return true;
    default: return false;  // a kind newer than this client: skipped, not fatal
  }
}

}  // namespace

RunCall::RunCall(std::shared_ptr<Connection> connection, v1::RunRequest request, RunCallback callback)
    : connection_(std::move(connection)), request_(std::move(request)), callback_(std::move(callback)) {}

std::shared_ptr<RunCall> RunCall::Start(std::shared_ptr<Connection> connection, v1::RunRequest request,
                                        RunCallback callback) {
  std::shared_ptr<RunCall> call(new RunCall(std::move(connection), std::move(request), std::move(callback)));
  Status gone;
  call->link_ = call->connection_->Acquire(&call->context_, false, &gone);
  if (!call->link_) {  // the sidecar is gone: the run ends now, on this thread
    call->Complete(std::move(gone));
    return call;
  }
  // request_ and response_ are members: gRPC reads and writes them after Start returns.
  call->link_->agent->async()->Run(&call->context_, &call->request_, call.get());
  call->StartRead(&call->response_);
  call->StartCall();
  return call;
}

void RunCall::OnReadDone(bool ok) {
  if (!ok) return;  // the stream ended: OnDone follows with the status
  RunUpdate update;
  if (KindOf(response_.event(), &update.kind)) {
    update.run_id = response_.event().run_id();
    update.seq = response_.event().seq();
    finished_ = finished_ || update.kind == RunEventKind::kFinished;
    update.event = std::move(*response_.mutable_event());
    if (callback_) callback_(update);
  }
  response_.Clear();
  StartRead(&response_);
}

void RunCall::OnDone(const grpc::Status& grpc_status) {
  Status status = StatusFromCall(grpc_status, context_);
  if (status.code == StatusCode::kCancelled && status.reason.empty() && cancelled_.load()) {
    // Cancelled here, so no sidecar trailer: give it the sidecar's reason for a cancelled run.
    status.reason = "RUN_CANCELLED";
  }
  if (status.ok() && !finished_) {
    status = Status::Local(StatusCode::kInternal, "INTERNAL", "run stream ended without a finished event");
  }
  if (finished_) {
    // kFinished was the run's one final event. Whatever ended the stream after it
    // (a Cancel or a handle destroyed before the trailers came, the sidecar dying
    // then) is not the run's outcome and must not report a second end.
    status = Status{};
  }
  connection_->Release(&context_);
  // A lost connection waits for the supervisor's verdict (SIDECAR_GONE when the
  // process exited); Complete then runs on the supervisor's thread.
  connection_->SettleLater(std::move(status), *link_, cancelled_.load(), [this](Status s) { Complete(std::move(s)); });
}

void RunCall::Complete(Status status) {
  if (!status.ok() && callback_) {
    RunUpdate update;
    update.kind = RunEventKind::kError;
    update.run_id = request_.run_id();
    update.error = status;
    callback_(update);
  }
  // Whatever the callback captured is released before a waiter wakes up.
  callback_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  final_ = std::move(status);
  done_ = true;
  // Notified under the lock and nothing touched after it: once the lock is
  // released a waiter may free this call (gRPC no longer uses it in OnDone).
  cv_.notify_all();
}

void RunCall::Cancel() {
  cancelled_.store(true);
  context_.TryCancel();
}

Status RunCall::CancelOnServer() {
  v1::CancelRunRequest request;
  request.set_run_id(request_.run_id());
  v1::CancelRunResponse response;
  return connection_->Unary(&Link::agent, &v1::AgentService::Stub::CancelRun, request, &response);
}

Status RunCall::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return final_;
}

bool RunCall::WaitFor(std::chrono::milliseconds timeout, Status* final_status) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return done_; })) return false;
  if (final_status != nullptr) *final_status = final_;
  return true;
}

bool RunCall::Done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

}  // namespace internal
}  // namespace game_sidecar
