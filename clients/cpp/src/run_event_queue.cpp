// RunEventQueue: the hand-off from gRPC's callback threads to a game thread.
#include <algorithm>

#include "game_sidecar/run.h"

namespace game_sidecar {

namespace {

bool IsEnd(const RunUpdate& u) { return u.kind == RunEventKind::kFinished || u.kind == RunEventKind::kError; }

// What a cancelled run's end reads as, whatever it was when it was queued.
void MakeCancelled(RunUpdate& u) {
  u.kind = RunEventKind::kError;
  u.seq = 0;
  u.event.Clear();
  u.error = Status::Local(StatusCode::kCancelled, "RUN_CANCELLED", "run " + u.run_id + " was cancelled by the game");
}

}  // namespace

void RunEventQueue::Push(RunUpdate update) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.count(update.run_id) != 0 && !IsEnd(update)) return;  // never delivered: not kept
    if (IsEnd(update)) undelivered_ends_.insert(update.run_id);
    items_.push_back(std::move(update));
  }
  cv_.notify_one();
}

bool RunEventQueue::Skip(RunUpdate& update) {
  auto it = cancelled_.find(update.run_id);
  if (it != cancelled_.end() && !IsEnd(update)) return true;
  if (!IsEnd(update)) return false;
  undelivered_ends_.erase(update.run_id);  // delivered now
  if (it != cancelled_.end()) {
    MakeCancelled(update);
    cancelled_.erase(it);
  }
  return false;
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
  size_t delivered = 0;
  for (auto& u : batch) {
    {
      // Checked where the update lands: `fn` may have cancelled its run a moment ago.
      std::lock_guard<std::mutex> lock(mu_);
      if (Skip(u)) continue;
    }
    fn(u);
    ++delivered;
  }
  return delivered;
}

void RunEventQueue::Cancel(RunHandle& run) {
  run.Cancel();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string& id = run.run_id();
  // Done() and its end delivered: nothing is left to drop. (An end taken into a drain
  // that is running now is not delivered yet: the drain checks it where it lands.)
  if (run.Done() && undelivered_ends_.count(id) == 0) return;
  cancelled_.insert(id);
  items_.erase(std::remove_if(items_.begin(), items_.end(),
                              [&](const RunUpdate& u) { return u.run_id == id && !IsEnd(u); }),
               items_.end());
}

bool RunEventQueue::TryPop(RunUpdate* out) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!items_.empty()) {
    *out = std::move(items_.front());
    items_.pop_front();
    if (!Skip(*out)) return true;
  }
  return false;
}

bool RunEventQueue::WaitPop(RunUpdate* out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto until = std::chrono::steady_clock::now() + timeout;
  while (cv_.wait_until(lock, until, [this] { return !items_.empty(); })) {
    *out = std::move(items_.front());
    items_.pop_front();
    if (!Skip(*out)) return true;
  }
  return false;
}

size_t RunEventQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

RunCallback RunEventQueue::Sink() {
  return [this](const RunUpdate& update) { Push(update); };
}

}  // namespace game_sidecar
