// SidecarExit::describe and the names of the statuses.
#include "game_sidecar/sidecar_exit.h"

#include <csignal>
#include <cstring>

namespace game_sidecar {
namespace {

std::string SignalName(int sig) {
  switch (sig) {
#ifdef SIGKILL
    case SIGKILL: return "SIGKILL";
#endif
#ifdef SIGTERM
    case SIGTERM: return "SIGTERM";
#endif
#ifdef SIGSEGV
    case SIGSEGV: return "SIGSEGV";
#endif
#ifdef SIGABRT
    case SIGABRT: return "SIGABRT";
#endif
#ifdef SIGINT
    case SIGINT: return "SIGINT";
#endif
#ifdef SIGBUS
    case SIGBUS: return "SIGBUS";
#endif
    default: return "signal";
  }
}

}  // namespace

std::string SidecarExit::describe() const {
  std::string out;
  if (exit_code) {
    out = "exited with code " + std::to_string(*exit_code);
  } else if (signal) {
    out = "killed by signal " + std::to_string(*signal) + " (" + SignalName(*signal) + ")";
  } else {
    out = "ended (status unknown)";
  }
  if (hung) out += ", declared hung";
  out += requested ? ", requested" : ", not requested";
  if (!stderr_tail.empty()) {
    std::string last = stderr_tail.substr(stderr_tail.rfind('\n') == std::string::npos ? 0 : stderr_tail.rfind('\n') + 1);
    if (last.size() > 300) last = last.substr(0, 300) + "...";
    out += "; last stderr: " + last;
  }
  return out;
}

const char* SidecarStatusName(SidecarStatus status) {
  switch (status) {
    case SidecarStatus::kStarting: return "starting";
    case SidecarStatus::kReady: return "ready";
    case SidecarStatus::kRestarting: return "restarting";
    case SidecarStatus::kStopped: return "stopped";
    case SidecarStatus::kFailed: return "failed";
  }
  return "unknown";
}

const char* PendingName(ResumedSession::Pending pending) {
  switch (pending) {
    case ResumedSession::Pending::kNone: return "none";
    case ResumedSession::Pending::kReplayed: return "replayed";
    case ResumedSession::Pending::kAppliedNow: return "applied_now";
    case ResumedSession::Pending::kNotApplied: return "not_applied";
  }
  return "unknown";
}

}  // namespace game_sidecar
