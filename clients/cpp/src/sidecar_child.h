// One spawned sidecar process: its pipes, reader threads for the handshake
// line and the stderr lines, and a watcher thread that sees it end at once.
// SidecarProcess runs one Child at a time (a new one per restart). The line
// handling is shared (sidecar_child.cpp); the process itself is POSIX
// (sidecar_child_posix.cpp: vfork/exec, poll, waitpid) or Windows
// (sidecar_child_win.cpp: CreateProcessW in a kill-on-close Job Object,
// ReadFile threads, WaitForSingleObject). Internal header.
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

#include "game_sidecar/handshake.h"


namespace game_sidecar {
namespace internal {

// What a Child takes from SidecarOptions (this header needs no protobuf, so the
// launcher builds alone: GAME_SIDECAR_LAUNCHER_ONLY).
struct ChildOptions {
  std::string working_directory;  // "" = the game's
  size_t stderr_tail_lines = 40;
  std::function<void(const std::string& line)> on_log;
};

class Child {
 public:
  using Clock = std::chrono::steady_clock;

  // Spawns argv with env (the whole environment). `on_exit` runs on the
  // watcher thread right after the process was reaped.
  static std::unique_ptr<Child> Spawn(const ChildOptions& options, const std::vector<std::string>& argv,
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
  // The stop sequence's last steps, only while the process was not reaped.
  // POSIX: SIGTERM and SIGKILL. Windows has no SIGTERM: both are
  // TerminateProcess with exit code 1.
  void Terminate();
  void Kill();
  // Waits up to `timeout` for the process to be reaped; true when it was.
  bool WaitExited(std::chrono::milliseconds timeout);
  bool exited() const;
  // After exited(): POSIX: the waitpid status (known = false when SIGCHLD was
  // ignored and the system reaped it); Windows: the exit code (always known).
  bool status_known() const { return status_known_; }
  int wait_status() const { return wait_status_; }
  // After exited(): the exit code, or -1 (killed by a signal, or unknown).
  int exit_code() const;
  // After exited(): the signal that ended it, or 0 (always 0 on Windows).
  int term_signal() const;
  Clock::time_point exited_at() const { return exited_at_; }
  // The last `lines` stderr lines (all kept ones for 0), newline-joined.
  std::string StderrTail(size_t lines = 0) const;
  // Waits up to `timeout` for the reader to see EOF on both pipes; true when it did.
  bool WaitDrained(std::chrono::milliseconds timeout);
  // Waits (bounded) for the reader to see EOF on both pipes so the last lines arrive, then stops it.
  void StopReader(std::chrono::milliseconds drain);

 private:
  explicit Child(const ChildOptions& options, std::function<void()> on_exit);
  void WatchLoop();
  void OnStderrLine(std::string line);
  // Shared line handling, called by the platform's reader(s).
  void OnStdoutBytes(std::string* buf, const char* data, size_t n);
  void OnStdoutEof(const std::string& rest);
  void OnStderrBytes(std::string* buf, const char* data, size_t n);
  void OnStderrEof(std::string rest);
  void OnExited(bool status_known, int status);

  const size_t tail_lines_;
  const std::function<void(const std::string&)> on_log_;
  const std::function<void()> on_exit_;
  int pid_ = -1;
#ifdef _WIN32
  void ReadLoop(void* pipe, bool is_stdout);
  // HANDLEs (void* keeps <windows.h> out of this header).
  void* process_ = nullptr;
  void* job_ = nullptr;  // JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: closing it (or our death) kills the sidecar
  void* stdin_ = nullptr;
  void* stdout_ = nullptr;
  void* stderr_ = nullptr;
  void* reader_threads_[2] = {nullptr, nullptr};  // for CancelSynchronousIo when a drain gives up
  std::thread out_reader_, err_reader_, watcher_;
#else
  void ReaderLoop();
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // interrupts the reader's poll
  std::thread reader_, watcher_;
#endif

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
