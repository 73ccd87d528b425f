// Launching the sidecar the way a game does (docs/protocol.md §1): spawn
// `game-sidecar serve` with piped stdin/stdout/stderr and the magic and token
// environment, read the JSON handshake with a timeout, forward stderr lines to a
// log callback, and stop it (close stdin, wait, SIGTERM, SIGKILL) when destroyed.
//
// After the handshake the process is supervised ("When the sidecar exits" in
// docs/protocol.md §1): a thread reaps it the moment it ends, a liveness check
// (GetInfo with a short deadline, every liveness_interval) declares it hung and
// kills it when it stops answering for hang_timeout, each exit is reported
// (on_exit, wait_exit, SidecarExit), the clients made from it fail with
// SIDECAR_GONE, its socket folder is removed, and with a RestartPolicy it is
// relaunched and the clients swap to the new process.
//
// Linux and macOS: a vfork/exec child; Windows: CreateProcessW in a Job Object
// that kills the sidecar when the game ends (docs/unreal.md, "Windows"). On
// Windows there is no SIGTERM step: the stop sequence is stdin EOF, the grace,
// then TerminateProcess, and an exit carries its exit code, never a signal.
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

#include <atomic>
#include <optional>

#include "game_sidecar/call_queue.h"
#include "game_sidecar/handshake.h"
#include "game_sidecar/sidecar_exit.h"

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
  // Lines of stderr kept for error reports (a SidecarExit carries the last 20 of them).
  size_t stderr_tail_lines = 40;
  // Liveness: a GetInfo every liveness_interval with a deadline of
  // liveness_timeout; no answer for hang_timeout declares the sidecar hung: it
  // is killed (SIGKILL) and handled as an exit with hung = true. Zero
  // liveness_interval turns the check off (a hang is then found only by the
  // clients' keepalive and deadlines).
  std::chrono::milliseconds liveness_interval{1000};
  std::chrono::milliseconds liveness_timeout{1000};
  std::chrono::milliseconds hang_timeout{3000};
  // Opt-in supervised restart after an exit the game did not ask for: the
  // same options (same --state-dir, same token) are launched again, and every
  // SidecarClient made from this process swaps to the new one. No policy = no
  // restart: the first such exit is final (status kFailed).
  std::optional<RestartPolicy> restart;
  // Called with each stderr line (the sidecar's JSON log lines), on a reader
  // thread owned by SidecarProcess: it must be thread-safe and quick.
  std::function<void(const std::string& line)> on_log;
};

// Why Launch failed. Every kind carries the tail of the sidecar's stderr.
struct LaunchError {
  enum class Kind {
    kSpawnFailed,            // the executable could not be started (not found, not executable)
    kExitedBeforeHandshake,  // the process ended (or closed stdout) before a handshake line
    kHandshakeTimeout,       // no handshake line within handshake_timeout; the process was killed
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

// How Stop() ended the sidecar (the full record is SidecarExit, wait_exit).
struct ExitInfo {
  enum class How {
    kNotStopped,     // still running (Stop not called)
    kExited,         // ended by itself after stdin closed (the orderly path)
    kTerminated,     // needed SIGTERM
    kKilled,         // needed SIGKILL (also: it was not answering, so Stop killed it at once)
    kGone,           // it had already ended before Stop, not at the game's request
                     // (crashed, killed, declared hung): see exit_code / term_signal
  };
  How how = How::kNotStopped;
  int exit_code = -1;   // when it exited normally
  int term_signal = 0;  // when a signal ended it
};

const char* ExitHowName(ExitInfo::How how);

class SidecarClient;
namespace internal {
class Child;
class Connection;
class LivenessProbe;
class TrackerState;
}

class SidecarProcess {
 public:
  // Spawns the sidecar and waits for its handshake. Returns nullptr and fills
  // `error` on failure; a failed launch leaves no process behind.
  static std::unique_ptr<SidecarProcess> Launch(SidecarOptions options, LaunchError* error);
  // Launch without blocking (call_queue.h): the spawn and the handshake wait
  // run on `queue`'s worker, in order with the calls submitted before it, and
  // `done` gets the process (or nullptr and the error) inside a later
  // queue.Drain(). A process no callback received (the call was cancelled, the
  // queue destroyed) is stopped on the worker.
  static CallHandle LaunchAsync(SidecarOptions options, CallQueue& queue,
                                std::function<void(std::unique_ptr<SidecarProcess> process, LaunchError error)> done);

  // Stops the sidecar (see Stop) if it still runs.
  ~SidecarProcess();
  SidecarProcess(const SidecarProcess&) = delete;
  SidecarProcess& operator=(const SidecarProcess&) = delete;

  // The current process's handshake, target and pid (the new ones after a restart).
  Handshake handshake() const;
  // The token to send: the one we chose, or the one the handshake reported.
  // The same across restarts.
  const std::string& token() const { return token_; }
  // The gRPC target for SidecarClient ("unix:/..." or "127.0.0.1:port").
  std::string target() const;
  int pid() const;
  // The last stderr lines of the current (or last) process, newline-joined.
  std::string StderrTail() const;

  SidecarStatus status() const;
  // Callbacks run on the process's supervisor thread (never the game thread):
  // keep them short and thread-safe, hand game work to the game thread (a
  // queue drained per frame, or AsyncTask(GameThread)), and never destroy the
  // SidecarProcess from inside one. Each registered callback stays. An
  // on_exit registered after the final exit is called at once, on the caller's thread.
  // on_status: every status change. on_exit: every process exit (with a
  // restart policy, one per process). on_restart: each restart's outcome.
  void on_status(std::function<void(SidecarStatus)> callback);
  void on_exit(std::function<void(const SidecarExit&)> callback);
  void on_restart(std::function<void(const RestartOutcome&)> callback);
  // Waits up to `timeout` (zero: a poll, fine on the game thread) for the final
  // exit: the one after which no process runs (kStopped or kFailed). True with
  // *exit filled once it happened.
  bool wait_exit(std::chrono::milliseconds timeout, SidecarExit* exit = nullptr) const;
  // The most recent exit of any process of this SidecarProcess (none before the first).
  std::optional<SidecarExit> last_exit() const;

  // Closes stdin (the sidecar exits within 1 s on EOF), waits exit_grace, then
  // SIGTERM, waits terminate_grace, then SIGKILL; a sidecar that is not
  // answering (SIGSTOPped, deadlocked) is killed at once instead. Reaps it,
  // stops the supervisor and any restart, removes the socket folder, and
  // reports truthfully: kGone when it had already ended by itself. Idempotent:
  // later calls return the first result. Blocks; not from a callback.
  ExitInfo Stop();
  // Stop without blocking (call_queue.h): takes the process, so nothing on
  // the game's side can use it while it stops, runs Stop() and then its
  // destructor on `queue`'s worker (in order with the calls submitted before
  // it), and hands the ExitInfo to `done` inside a later queue.Drain(). A
  // hung sidecar is killed there; the game thread never waits for it.
  // Clients made from the process keep failing with SIDECAR_GONE.
  static CallHandle StopAsync(std::unique_ptr<SidecarProcess> process, CallQueue& queue,
                              std::function<void(ExitInfo exit)> done);

 private:
  friend class SidecarClient;
  explicit SidecarProcess(SidecarOptions options);
  // Launches one process and reads its handshake; on failure it is stopped and `error` filled.
  std::shared_ptr<internal::Child> LaunchChild(Handshake* handshake, LaunchError* error);
  LaunchError FailChild(std::shared_ptr<internal::Child> child, LaunchError::Kind kind, std::string message);
  // The stop sequence for one process: close stdin, grace, SIGTERM, grace,
  // SIGKILL (at once when kill_now, or as soon as it is found not answering).
  ExitInfo::How Escalate(internal::Child& child, bool kill_now);
  void StartProbe();
  // A SidecarClient made from this process: supervised from now on.
  void Attach(const std::shared_ptr<internal::Connection>& connection) const;
  std::vector<std::shared_ptr<internal::Connection>> Connections() const;
  void Supervise();
  void Probe();
  // Handles the current child's exit; false when it was final.
  bool HandleExit();
  bool Restart(const std::shared_ptr<const SidecarExit>& exit);
  // Forgets restarts older than the policy's window; true when no more are allowed.
  bool PolicyUsedUp(std::chrono::steady_clock::time_point now);
  // After the tracked sessions resumed: sends what the game wrote meanwhile
  // (new writes wait meanwhile), then lets the game's calls through
  // (sidecar_supervisor.cpp says why so).
  void PublishWhenNothingIsHeld(const std::vector<std::shared_ptr<internal::Connection>>& connections,
                                const std::vector<std::shared_ptr<internal::TrackerState>>& trackers,
                                RestartOutcome* outcome);
  void SetStatus(SidecarStatus status);
  void RemoveSocketFolder(const Handshake& handshake) const;

  SidecarOptions options_;
  std::string token_;
  std::vector<std::string> env_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<internal::Child> child_;
  Handshake handshake_;
  SidecarStatus status_ = SidecarStatus::kStarting;
  // The last status on_status reported: an exit sets status_ first, the
  // notification follows the exit's (sidecar_supervisor.cpp, HandleExit).
  SidecarStatus announced_ = SidecarStatus::kStarting;
  std::thread supervisor_;
  std::atomic<bool> stopping_{false};
  bool stop_called_ = false;
  bool stop_done_ = false;
  std::chrono::steady_clock::time_point stop_started_{};
  ExitInfo exit_;
  bool final_ = false;
  std::optional<SidecarExit> last_exit_;
  bool hung_declared_ = false;  // for the current child
  bool unresponsive_ = false;   // the last liveness check got no answer in time
  std::chrono::steady_clock::time_point last_answer_{};        // when the last answer came
  std::chrono::steady_clock::time_point last_answer_start_{};  // when the check it answered started
  std::unique_ptr<internal::LivenessProbe> probe_;  // supervisor thread only
  std::vector<std::chrono::steady_clock::time_point> restarts_;
  mutable std::vector<std::weak_ptr<internal::Connection>> connections_;
  std::vector<std::function<void(SidecarStatus)>> on_status_;
  std::vector<std::function<void(const SidecarExit&)>> on_exit_;
  std::vector<std::function<void(const RestartOutcome&)>> on_restart_;
};

}  // namespace game_sidecar
