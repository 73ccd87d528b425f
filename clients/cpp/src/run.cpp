// RunHandle: reads a Run stream on its own thread and reports each event.
#include "game_sidecar/run.h"

#include "game_sidecar/sidecar_client.h"

namespace game_sidecar {
namespace {

bool KindOf(const sidecar::v1::RunEvent& event, RunEventKind* kind) {
  using E = sidecar::v1::RunEvent;
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

RunHandle::RunHandle(SidecarClient* client, std::string run_id) : client_(client), run_id_(std::move(run_id)) {}

RunHandle::~RunHandle() {
  if (!done_.load()) Cancel();
  if (thread_.joinable()) thread_.join();
}

void RunHandle::Cancel() {
  cancelled_.store(true);
  context_.TryCancel();
}

Status RunHandle::CancelOnServer() { return client_->CancelRun(run_id_); }

Status RunHandle::Wait() {
  if (thread_.joinable()) thread_.join();
  return final_;
}

void RunHandle::Read(std::unique_ptr<grpc::ClientReader<sidecar::v1::RunResponse>> reader, RunCallback callback) {
  sidecar::v1::RunResponse response;
  bool finished = false;
  while (reader->Read(&response)) {
    RunUpdate update;
    if (!KindOf(response.event(), &update.kind)) continue;
    update.run_id = response.event().run_id();
    update.seq = response.event().seq();
    finished = finished || update.kind == RunEventKind::kFinished;
    update.event = std::move(*response.mutable_event());
    if (callback) callback(update);
  }
  Status status = StatusFromCall(reader->Finish(), context_);
  if (status.code == grpc::StatusCode::CANCELLED && status.reason.empty() && cancelled_.load()) {
    // Cancelled here, so no sidecar trailer: give it the sidecar's reason for a cancelled run.
    status.reason = "RUN_CANCELLED";
  }
  if (status.ok() && !finished) {
    status = Status::Local(grpc::StatusCode::INTERNAL, "INTERNAL", "run stream ended without a finished event");
  }
  final_ = status;
  if (!status.ok()) {
    RunUpdate update;
    update.kind = RunEventKind::kError;
    update.run_id = run_id_;
    update.error = status;
    if (callback) callback(update);
  }
  done_.store(true);
}

void RunEventQueue::Push(RunUpdate update) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(update));
  }
  cv_.notify_one();
}

size_t RunEventQueue::Drain(const std::function<void(RunUpdate&)>& fn, size_t max) {
  std::deque<RunUpdate> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (max >= items_.size()) {
      batch.swap(items_);
    } else {
      for (size_t i = 0; i < max; ++i) {
        batch.push_back(std::move(items_.front()));
        items_.pop_front();
      }
    }
  }
  for (auto& u : batch) fn(u);
  return batch.size();
}

bool RunEventQueue::TryPop(RunUpdate* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (items_.empty()) return false;
  *out = std::move(items_.front());
  items_.pop_front();
  return true;
}

bool RunEventQueue::WaitPop(RunUpdate* out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return !items_.empty(); })) return false;
  *out = std::move(items_.front());
  items_.pop_front();
  return true;
}

size_t RunEventQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

RunCallback RunEventQueue::Sink() {
  return [this](const RunUpdate& update) { Push(update); };
}

}  // namespace game_sidecar
