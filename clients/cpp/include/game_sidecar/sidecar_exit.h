// What a game learns when its sidecar ends (docs/protocol.md §1, "When the
// sidecar exits"): the exit record, the process status with its changes, and
// the opt-in restart policy with the outcome of each restart.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "game_sidecar/status.h"

namespace game_sidecar {

// How one sidecar process ended. Exactly one of exit_code / signal is set
// when the process was reaped with a known status.
struct SidecarExit {
  std::optional<int> exit_code;  // it exited by itself with this code
  std::optional<int> signal;     // a signal ended it (POSIX; SIGKILL = 9)
  // The last <= 20 lines the process wrote on stderr, newline-joined: where it
  // says why it ended.
  std::string stderr_tail;
  // The game asked for the stop (SidecarProcess::Stop or its destructor).
  bool requested = false;
  // It stopped answering: declared gone by the liveness check (or by Stop) and
  // killed with SIGKILL by the client.
  bool hung = false;
  int64_t pid = 0;
  // The endpoint it served: "unix:/tmp/game-sidecar-x/sidecar.sock" or "127.0.0.1:PORT".
  std::string endpoint;

  // "killed by signal 9 (SIGKILL), not requested; last stderr: ..." (one line).
  std::string describe() const;
};

// The life of a SidecarProcess. kStarting until the first handshake; kReady
// while a process serves; kRestarting between an unexpected exit and the next
// handshake (restart policy only); kStopped after Stop(); kFailed after an
// exit the game did not ask for with no restart left (or no policy).
enum class SidecarStatus { kStarting, kReady, kRestarting, kStopped, kFailed };

const char* SidecarStatusName(SidecarStatus status);

// Opt-in supervised restart (SidecarOptions::restart). At most max_restarts
// restarts within any `window`; the n-th restart in the window waits
// backoff_initial * 2^(n-1), at most backoff_max, before the relaunch.
struct RestartPolicy {
  int max_restarts = 3;
  std::chrono::milliseconds window{60000};
  std::chrono::milliseconds backoff_initial{250};
  std::chrono::milliseconds backoff_max{5000};
};

// What happened to one TrackedSession across a restart.
struct ResumedSession {
  enum class Pending {
    kNone,        // no batch was waiting for its acknowledgement
    kReplayed,    // it had been applied before the exit: the sidecar replayed its delta_id (applied once)
    kAppliedNow,  // it had not been applied: it was applied by the resend
    kNotApplied,  // the resend was refused (pending_status says why): not applied, the game decides
  };
  std::string session_id;
  // Re-opened with its state: false when the new process did not have it
  // (no --state-dir, or the journal lacked it); the game resyncs it with ReplaceState.
  bool resumed = false;
  int64_t revision = 0;  // the tracked revision after the restart
  Pending pending = Pending::kNone;
  std::string pending_delta_id;
  Status pending_status;  // for kNotApplied
  // The writes held while the sidecar was gone (Apply answered WRITE_KEPT),
  // sent after the pending one in the order written: kAppliedNow or
  // kNotApplied (with why). Each is also reported to TrackedSession::on_pending.
  struct Held {
    std::string delta_id;
    Pending outcome = Pending::kNone;
    int64_t revision = 0;
    Status status;  // for kNotApplied
  };
  std::vector<Held> held;
};

const char* PendingName(ResumedSession::Pending pending);

// Reported after each restart attempt sequence (SidecarProcess::on_restart).
struct RestartOutcome {
  SidecarExit exit;        // the exit that caused it
  bool restarted = false;  // false: the policy is exhausted (status kFailed)
  int attempts = 0;        // launches it took
  std::string error;       // the last launch error when !restarted
  // True when the sessions did not survive: the sidecar runs without
  // --state-dir, or a tracked session was missing after the restart.
  bool sessions_lost = false;
  std::vector<std::string> lost_sessions;  // tracked sessions that were not resumed
  std::vector<ResumedSession> sessions;    // every tracked session
};

}  // namespace game_sidecar
