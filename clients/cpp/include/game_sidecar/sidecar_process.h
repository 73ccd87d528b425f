// Launching the sidecar the way a game does (docs/protocol.md §1): spawn
// `game-sidecar serve` with piped stdin/stdout/stderr and the magic and token
// environment, read the JSON handshake with a timeout, forward stderr lines to a
// log callback, and stop it (close stdin, wait, SIGTERM, SIGKILL) when destroyed.
//
// POSIX only (Linux, macOS). On Windows launch with `--listen tcp://127.0.0.1:0`
// through your own CreateProcess code and hand the handshake to SidecarClient.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "game_sidecar/handshake.h"

namespace game_sidecar {

struct SidecarOptions {
  // The console script, or a Python interpreter with args {"-m", "sidecar", "serve"}.
  // Searched in PATH when it holds no '/'.
  std::string executable = "game-sidecar";
  std::vector<std::string> args = {"serve"};
  // The per-launch secret. Empty = a random 256-bit token made here; it reaches
  // the sidecar through GAME_SIDECAR_TOKEN and is never printed on a pipe.
  std::string token;
  // Extra environment, added to (and overriding) the game's own. It may
  // override GAME_SIDECAR_MAGIC (tests do); GAME_SIDECAR_TOKEN comes from `token` only.
  std::vector<std::pair<std::string, std::string>> env;
  // Working directory of the sidecar; empty = the game's.
  std::string working_directory;
  // How long to wait for the handshake line.
  std::chrono::milliseconds handshake_timeout{15000};
  // After stdin is closed, how long the sidecar gets to exit on its own
  // (it promises to within 1 s) before SIGTERM.
  std::chrono::milliseconds exit_grace{3000};
  // After SIGTERM, how long before SIGKILL.
  std::chrono::milliseconds terminate_grace{2000};
  // Lines of stderr kept for error reports.
  size_t stderr_tail_lines = 40;
  // Called with each stderr line (the sidecar's JSON log lines), on a reader
  // thread owned by SidecarProcess: it must be thread-safe and quick.
  std::function<void(const std::string& line)> on_log;
};

// Why Launch failed. Every kind carries the tail of the sidecar's stderr.
struct LaunchError {
  enum class Kind {
    kSpawnFailed,            // the executable could not be started (not found, not executable)
    kExitedBeforeHandshake,  // the process ended (or closed stdout) before a handshake line
    kTimedOut,               // no handshake line within handshake_timeout; the process was killed
    kMalformedHandshake,     // the first stdout line is not a valid protocol-1 handshake
    kStateDirLocked,         // exited with code 3 before a handshake: another sidecar holds
                             // the --state-dir lock (stop it, or give this one another dir)
  };
  Kind kind = Kind::kSpawnFailed;
  std::string message;
  std::string stderr_tail;
  // For kExitedBeforeHandshake and kStateDirLocked: exit code, or -1 when
  // killed by a signal / unknown.
  int exit_code = -1;
  int term_signal = 0;

  // One readable paragraph: kind, message, then the stderr tail.
  std::string ToString() const;
};

const char* LaunchErrorKindName(LaunchError::Kind kind);

// The exit code with which the sidecar refuses to start because another
// sidecar holds the lock on its --state-dir (reported as kStateDirLocked).
constexpr int kStateDirLockedExitCode = 3;

// How the sidecar ended.
struct ExitInfo {
  enum class How {
    kNotStopped,     // still running (Stop not called)
    kExited,         // ended by itself after stdin closed (the orderly path)
    kTerminated,     // needed SIGTERM
    kKilled,         // needed SIGKILL
  };
  How how = How::kNotStopped;
  int exit_code = -1;   // when it exited normally
  int term_signal = 0;  // when a signal ended it
};

class SidecarProcess {
 public:
  // Spawns the sidecar and waits for its handshake. Returns nullptr and fills
  // `error` on failure; a failed launch leaves no process behind.
  static std::unique_ptr<SidecarProcess> Launch(SidecarOptions options, LaunchError* error);

  // Stops the sidecar (see Stop) if it still runs.
  ~SidecarProcess();
  SidecarProcess(const SidecarProcess&) = delete;
  SidecarProcess& operator=(const SidecarProcess&) = delete;

  const Handshake& handshake() const { return handshake_; }
  // The token to send: the one we chose, or the one the handshake reported.
  const std::string& token() const { return token_; }
  // The gRPC target for SidecarClient ("unix:/..." or "127.0.0.1:port").
  std::string target() const { return GrpcTarget(handshake_); }
  int pid() const { return pid_; }
  // The last stderr lines, newline-joined.
  std::string StderrTail() const;

  // Closes stdin (the sidecar exits within 1 s on EOF), waits exit_grace, then
  // SIGTERM, waits terminate_grace, then SIGKILL; reaps the process and joins
  // the reader thread. Idempotent: later calls return the first result. Call it
  // (and destroy the object) from one thread at a time.
  ExitInfo Stop();

 private:
  explicit SidecarProcess(SidecarOptions options);
  bool Start(LaunchError* error);
  void ReaderLoop();
  void OnStderrLine(std::string line);
  // Waits up to `timeout` for the child to end; true when reaped.
  bool WaitExit(std::chrono::milliseconds timeout);
  // Waits (bounded) for the reader to see EOF on both pipes, then stops it.
  void StopReader(std::chrono::milliseconds drain);
  LaunchError Fail(LaunchError::Kind kind, std::string message);

  SidecarOptions options_;
  Handshake handshake_;
  std::string token_;
  int pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // interrupts the reader's poll
  std::thread reader_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool have_line_ = false;     // the first stdout line arrived
  std::string first_line_;
  bool stdout_eof_ = false;
  bool stderr_eof_ = false;
  std::deque<std::string> stderr_tail_;

  bool reaped_ = false;
  int wait_status_ = 0;
  bool status_known_ = false;
  bool stopped_ = false;
  ExitInfo exit_;
};

}  // namespace game_sidecar
