// Lanes: one detached thread per busy lane; Close and WaitIdle are the joins.
#include "capi_lanes.h"

#include <system_error>
#include <thread>
#include <utility>

namespace game_sidecar_c {

void Lanes::Submit(const std::string& key, std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return;
  auto found = lanes_.find(key);
  if (found != lanes_.end()) {
    found->second.tasks.push_back(std::move(task));  // its thread takes it next
    return;
  }
  lanes_[key].tasks.push_back(std::move(task));
  ++threads_;
  try {
    // Detached: Close waits for threads_ to reach 0, which is the join.
    std::thread([this, key] { Work(key); }).detach();
  } catch (const std::system_error&) {
    // No thread to be had: run the lane here, in order still (the caller is the
    // object's worker, which then waits for this lane as it did for everything).
    lock.unlock();
    Work(key);
  }
}

void Lanes::Work(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto lane = lanes_.find(key);
    if (lane == lanes_.end() || lane->second.tasks.empty()) {
      if (lane != lanes_.end()) lanes_.erase(lane);
      break;
    }
    // Left in the deque until done, so the lane stays known (and busy) while it runs.
    std::function<void()> task = std::move(lane->second.tasks.front());
    lock.unlock();
    task();
    task = nullptr;  // what it held (a client, a request) goes here, on the lane
    lock.lock();
    lane = lanes_.find(key);
    if (lane != lanes_.end() && !lane->second.tasks.empty()) lane->second.tasks.pop_front();
  }
  --threads_;
  changed_.notify_all();
}

void Lanes::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return lanes_.empty(); });
}

void Lanes::Close() {
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  // Keep each lane's running task (the front), drop the rest.
  for (auto& entry : lanes_) {
    while (entry.second.tasks.size() > 1) entry.second.tasks.pop_back();
  }
  changed_.wait(lock, [this] { return threads_ == 0; });
}

}  // namespace game_sidecar_c
