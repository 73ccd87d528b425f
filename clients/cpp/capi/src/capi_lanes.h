// Per-session lanes: where the blocking part of the *_async calls and the run
// starts of one session runs, in the order submitted, on a thread of that
// session's own, so that a call stuck on one session (a slow import, a deadline
// running out) never holds up another session's calls and runs (issue 32: a run
// waited 2.4-2.7 s behind one stuck call on one serial worker).
//
// A lane's thread exists only while the lane has work: it starts with the first
// task, ends when the lane is empty, and the lane is forgotten, so a game with
// hundreds of sessions over a play session holds a thread only per session that
// is busy right now.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace game_sidecar_c {

class Lanes {
 public:
  Lanes() = default;
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;
  ~Lanes() { Close(); }

  // Runs `task` on `key`'s lane after the tasks submitted to it before. Does
  // nothing once closed.
  void Submit(const std::string& key, std::function<void()> task);
  // Blocks until every task submitted so far, on every lane, has run: how a
  // launch or a stop waits for the calls the game submitted before it.
  void WaitIdle();
  // Drops the tasks not started, waits for the running ones to end; Submit does
  // nothing afterwards.
  void Close();

 private:
  struct Lane {
    std::deque<std::function<void()>> tasks;
  };
  void Work(const std::string& key);

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Lane> lanes_;  // only lanes with work (queued or running)
  int threads_ = 0;                    // lane threads not yet ended
  bool closed_ = false;
};

}  // namespace game_sidecar_c
