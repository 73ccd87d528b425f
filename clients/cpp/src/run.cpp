// RunHandle: the caller's side of a RunCall.
#include "game_sidecar/run.h"

#include "run_call.h"

namespace game_sidecar {

const char* RunEventKindName(RunEventKind kind) {
  switch (kind) {
    case RunEventKind::kStarted: return "started";
    case RunEventKind::kText: return "text";
    case RunEventKind::kAttemptRejected: return "attempt_rejected";
    case RunEventKind::kAction: return "action";
    case RunEventKind::kNotes: return "notes";
    case RunEventKind::kUsage: return "usage";
    case RunEventKind::kFinished: return "finished";
    case RunEventKind::kError: return "error";
  }
  return "unknown";
}

RunHandle::RunHandle(std::shared_ptr<internal::RunCall> call, std::string run_id)
    : call_(std::move(call)), run_id_(std::move(run_id)) {}

RunHandle::~RunHandle() {
  if (!call_->Done()) call_->Cancel();
  // After a cancel OnDone comes at once; waiting keeps the promise that no
  // callback runs once the handle is gone (so a RunEventQueue may die next).
  call_->Wait();
}

void RunHandle::Cancel() { call_->Cancel(); }

Status RunHandle::CancelOnServer() { return call_->CancelOnServer(); }

Status RunHandle::Wait() { return call_->Wait(); }

bool RunHandle::WaitFor(std::chrono::milliseconds timeout, Status* final_status) {
  return call_->WaitFor(timeout, final_status);
}

bool RunHandle::Done() const { return call_->Done(); }

}  // namespace game_sidecar
