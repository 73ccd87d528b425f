// RunEventQueue: the hand-off from gRPC's callback threads to a game thread.
#include "game_sidecar/run.h"

namespace game_sidecar {

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
