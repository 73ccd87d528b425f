// CallQueue: one worker thread running calls in submission order, and the
// hand-off of their results to the thread that drains.
#include "game_sidecar/call_queue.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace game_sidecar {
namespace internal {

class CallQueueCore {
 public:
  struct Item {
    uint64_t id = 0;
    std::unique_ptr<QueuedCall> call;
  };

  // The worker: drops what was dropped, then runs the next call. Ends once
  // the queue is closed and nothing is left to destroy.
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [this] { return closed_ || !discard_.empty() || !tasks_.empty(); });
      if (!discard_.empty()) {
        std::vector<std::unique_ptr<QueuedCall>> dropped;
        dropped.swap(discard_);
        lock.unlock();
        dropped.clear();  // a dropped Launch's process is stopped here, off the game thread
        lock.lock();
        continue;
      }
      if (tasks_.empty()) break;  // closed, nothing left
      Item item = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = item.id;
      lock.unlock();
      bool has_result = item.call->Run();
      lock.lock();
      running_ = 0;
      bool cancelled = cancelled_.erase(item.id) != 0;
      if (has_result && !cancelled && !closed_) {
        ready_.push_back(std::move(item));
        ready_cv_.notify_all();
        continue;
      }
      lock.unlock();
      item.call.reset();
      lock.lock();
    }
  }

  uint64_t Add(std::unique_ptr<QueuedCall> call, bool ready) {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) {
      lock.unlock();
      call.reset();
      return 0;
    }
    uint64_t id = next_id_++;
    (ready ? ready_ : tasks_).push_back({id, std::move(call)});
    lock.unlock();
    // Outside the lock: the woken thread does not block on it at once.
    if (ready) {
      ready_cv_.notify_all();
    } else {
      work_cv_.notify_one();
    }
    return id;
  }

  bool Cancel(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || id == 0) return false;
    if (TakeInto(tasks_, id) || TakeInto(ready_, id)) return true;
    if (running_ == id || draining_.count(id) != 0) return cancelled_.insert(id).second;
    return false;
  }

  bool Pending(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || id == 0 || cancelled_.count(id) != 0) return false;
    auto has = [id](const std::deque<Item>& items) {
      return std::any_of(items.begin(), items.end(), [id](const Item& i) { return i.id == id; });
    };
    return running_ == id || draining_.count(id) != 0 || has(tasks_) || has(ready_);
  }

  size_t PendingCount() const {
    std::lock_guard<std::mutex> lock(mu_);
    // Items in a drain's batch stay counted until delivered; cancelled ones are not.
    size_t n = tasks_.size() + ready_.size() + draining_.size() + (running_ != 0 ? 1 : 0);
    return n - cancelled_.size();
  }

  size_t Drain(size_t max) {
    std::deque<Item> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      size_t n = std::min(max, ready_.size());
      for (size_t i = 0; i < n; ++i) {
        draining_.insert(ready_.front().id);
        batch.push_back(std::move(ready_.front()));
        ready_.pop_front();
      }
    }
    size_t delivered = 0;
    for (Item& item : batch) {
      bool cancelled;
      {
        // Checked where it lands: a callback earlier in this batch may have cancelled it.
        std::lock_guard<std::mutex> lock(mu_);
        draining_.erase(item.id);
        cancelled = cancelled_.erase(item.id) != 0;
        if (cancelled) {
          discard_.push_back(std::move(item.call));
          work_cv_.notify_one();
        }
      }
      if (cancelled) continue;
      item.call->Deliver();
      item.call.reset();  // the callback and what is left of the result, on this thread
      ++delivered;
    }
    return delivered;
  }

  bool WaitReady(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return ready_cv_.wait_for(lock, timeout, [this] { return !ready_.empty(); });
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    for (auto* items : {&tasks_, &ready_}) {
      for (Item& item : *items) discard_.push_back(std::move(item.call));
      items->clear();
    }
    cancelled_.clear();
    work_cv_.notify_one();
  }

 private:
  // Under mu_: moves item `id` of `items` to discard_ (the worker destroys it).
  bool TakeInto(std::deque<Item>& items, uint64_t id) {
    auto it = std::find_if(items.begin(), items.end(), [id](const Item& i) { return i.id == id; });
    if (it == items.end()) return false;
    discard_.push_back(std::move(it->call));
    items.erase(it);
    work_cv_.notify_one();
    return true;
  }

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable ready_cv_;
  std::deque<Item> tasks_;  // submitted, not started
  std::deque<Item> ready_;  // finished, not delivered
  std::vector<std::unique_ptr<QueuedCall>> discard_;  // dropped: destroyed on the worker
  std::unordered_set<uint64_t> draining_;   // taken into a Drain's batch, not delivered yet
  std::unordered_set<uint64_t> cancelled_;  // cancelled while in flight or in a Drain's batch
  uint64_t running_ = 0;
  uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace internal

bool CallHandle::pending() const {
  auto core = core_.lock();
  return core && core->Pending(id_);
}

bool CallHandle::Cancel() {
  auto core = core_.lock();
  return core && core->Cancel(id_);
}

CallQueue::CallQueue() : core_(std::make_shared<internal::CallQueueCore>()) {
  // The worker owns the core too: it outlives the queue when a call is still in flight.
  worker_ = std::thread([core = core_] { core->Work(); });
}

CallQueue::~CallQueue() {
  core_->Close();
  if (worker_.joinable()) worker_.detach();  // see "Destroying the queue" in call_queue.h
}

void CallQueue::Close() {
  core_->Close();
  if (worker_.joinable()) worker_.join();
}

size_t CallQueue::Drain(size_t max) { return core_->Drain(max); }

bool CallQueue::WaitReady(std::chrono::milliseconds timeout) { return core_->WaitReady(timeout); }

size_t CallQueue::pending() const { return core_->PendingCount(); }

CallHandle CallQueue::Enqueue(std::unique_ptr<internal::QueuedCall> call) {
  uint64_t id = core_->Add(std::move(call), false);
  return CallHandle(core_, id);
}

void CallQueue::PostReady(std::unique_ptr<internal::QueuedCall> call) { core_->Add(std::move(call), true); }

}  // namespace game_sidecar
