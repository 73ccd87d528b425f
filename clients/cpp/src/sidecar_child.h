// One spawned sidecar process (POSIX): its pipes, a reader thread for the
// handshake line and the stderr lines, and a watcher thread that reaps it with
// waitpid the moment it ends. SidecarProcess runs one Child at a time (a new
// one per restart). Internal header.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "game_sidecar/sidecar_process.h"

namespace game_sidecar {
namespace internal {

class Child {
 public:
  using Clock = std::chrono::steady_clock;

  // Spawns argv with env (the whole environment). `on_exit` runs on the
  // watcher thread right after the process was reaped.
  static std::unique_ptr<Child> Spawn(const SidecarOptions& options, const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env, std::function<void()> on_exit,
                                      std::string* error);
  // Kills the process if it still runs, reaps it, joins both threads, closes the pipes.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  enum class FirstLine { kGot, kEof, kTimedOut, kAborted, kNoHandshake };
  // Waits for the handshake line (the first stdout line that is one: lines
  // before it, e.g. stderr merged into stdout, are skipped and logged, up to
  // HandshakeScan's bound: kNoHandshake past it), stdout EOF, the timeout, or
  // `abort` turning true (checked every 50 ms).
  FirstLine WaitFirstLine(std::chrono::milliseconds timeout, const std::atomic<bool>& abort, std::string* line);
  // What was skipped before the handshake, for an error message ("" when nothing).
  std::string SkippedBeforeHandshake() const;

  int pid() const { return pid_; }
  void CloseStdin();
  void Signal(int sig);
  // Waits up to `timeout` for the process to be reaped; true when it was.
  bool WaitExited(std::chrono::milliseconds timeout);
  bool exited() const;
  // After exited(): the waitpid status (known = false when SIGCHLD was ignored and the system reaped it).
  bool status_known() const { return status_known_; }
  int wait_status() const { return wait_status_; }
  Clock::time_point exited_at() const { return exited_at_; }
  // The last `lines` stderr lines (all kept ones for 0), newline-joined.
  std::string StderrTail(size_t lines = 0) const;
  // Waits up to `timeout` for the reader to see EOF on both pipes; true when it did.
  bool WaitDrained(std::chrono::milliseconds timeout);
  // Waits (bounded) for the reader to see EOF on both pipes so the last lines arrive, then stops it.
  void StopReader(std::chrono::milliseconds drain);

 private:
  explicit Child(const SidecarOptions& options, std::function<void()> on_exit);
  void ReaderLoop();
  void WatchLoop();
  void OnStderrLine(std::string line);

  const size_t tail_lines_;
  const std::function<void(const std::string&)> on_log_;
  const std::function<void()> on_exit_;
  int pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // interrupts the reader's poll
  std::thread reader_, watcher_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool have_line_ = false;
  std::string first_line_;
  HandshakeScan scan_;
  bool no_handshake_ = false;  // the scan gave up
  bool stdout_eof_ = false;
  bool stderr_eof_ = false;
  std::deque<std::string> stderr_tail_;
  bool exited_ = false;
  bool status_known_ = false;
  int wait_status_ = 0;
  Clock::time_point exited_at_{};
};

}  // namespace internal
}  // namespace game_sidecar
