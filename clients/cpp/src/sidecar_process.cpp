// SidecarProcess, the launch half: spawn and handshake, the accessors, and the
// stop sequence. The supervision of the running process is in sidecar_supervisor.cpp.
#include "game_sidecar/sidecar_process.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "connection.h"
#include "liveness_probe.h"
#include "sidecar_child.h"
#ifdef _WIN32
#include "spawn_win.h"
#else
#include "spawn_posix.h"
#endif
#include "supervision.h"

namespace game_sidecar {
namespace {

using internal::Child;
using internal::Clock;
using internal::Connection;
using internal::kTick;
using internal::ProbeOptions;

constexpr char kMagicEnv[] = "GAME_SIDECAR_MAGIC";
constexpr char kMagicValue[] = "game-sidecar-v1";
constexpr char kTokenEnv[] = "GAME_SIDECAR_TOKEN";

std::string Truncate(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }


}  // namespace

const char* LaunchErrorKindName(LaunchError::Kind kind) {
  switch (kind) {
    case LaunchError::Kind::kSpawnFailed: return "spawn failed";
    case LaunchError::Kind::kExitedBeforeHandshake: return "exited before handshake";
    case LaunchError::Kind::kHandshakeTimeout: return "timed out waiting for handshake";
    case LaunchError::Kind::kMalformedHandshake: return "malformed handshake";
    case LaunchError::Kind::kStateDirLocked: return "state dir locked by another sidecar";
  }
  return "unknown";
}

const char* ExitHowName(ExitInfo::How how) {
  switch (how) {
    case ExitInfo::How::kNotStopped: return "not stopped";
    case ExitInfo::How::kExited: return "exited";
    case ExitInfo::How::kTerminated: return "terminated";
    case ExitInfo::How::kKilled: return "killed";
    case ExitInfo::How::kGone: return "gone before stop";
  }
  return "unknown";
}

std::string LaunchError::ToString() const {
  std::string out = std::string("sidecar launch failed: ") + LaunchErrorKindName(kind);
  if (!message.empty()) out += ": " + message;
  if (!stderr_tail.empty()) out += "\n--- sidecar stderr (tail) ---\n" + stderr_tail;
  return out;
}

SidecarProcess::SidecarProcess(SidecarOptions options) : options_(std::move(options)) {
  token_ = options_.token.empty() ? internal::RandomHex(32) : options_.token;
  std::vector<std::string> drop = {kMagicEnv, kTokenEnv};
  for (const auto& kv : options_.env) drop.push_back(kv.first);
  env_ = internal::EnvironmentWithout(drop);
  // Each key once (getenv would see only the first of two): options_.env wins,
  // except for the token, which only options_.token sets so token_ stays true.
  bool magic_given = false;
  for (const auto& kv : options_.env) {
    if (kv.first == kTokenEnv) continue;
    magic_given = magic_given || kv.first == kMagicEnv;
    env_.push_back(kv.first + "=" + kv.second);
  }
  if (!magic_given) env_.push_back(std::string(kMagicEnv) + "=" + kMagicValue);
  env_.push_back(std::string(kTokenEnv) + "=" + token_);
}

SidecarProcess::~SidecarProcess() { Stop(); }

std::unique_ptr<SidecarProcess> SidecarProcess::Launch(SidecarOptions options, LaunchError* error) {
  std::unique_ptr<SidecarProcess> p(new SidecarProcess(std::move(options)));
  LaunchError local;
  Handshake handshake;
  std::shared_ptr<Child> child = p->LaunchChild(&handshake, error != nullptr ? error : &local);
  if (!child) return nullptr;
  if (p->options_.token.empty() && !handshake.token.empty()) p->token_ = handshake.token;
  p->child_ = std::move(child);
  p->handshake_ = handshake;
  p->status_ = p->announced_ = SidecarStatus::kReady;
  p->last_answer_ = p->last_answer_start_ = Clock::now();
  if (p->options_.liveness_interval.count() > 0)
    p->probe_ = std::make_unique<internal::LivenessProbe>(GrpcTarget(handshake), p->token_, ProbeOptions());
  p->supervisor_ = std::thread([raw = p.get()] { raw->Supervise(); });
  return p;
}

std::shared_ptr<Child> SidecarProcess::LaunchChild(Handshake* handshake, LaunchError* error) {
  std::vector<std::string> argv = {options_.executable};
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  std::string spawn_error;
  internal::ChildOptions child_options;
  child_options.working_directory = options_.working_directory;
  child_options.stderr_tail_lines = options_.stderr_tail_lines;
  child_options.on_log = options_.on_log;
  std::shared_ptr<Child> child = Child::Spawn(child_options, argv, env_, [this] {
    { std::lock_guard<std::mutex> lock(mu_); }  // no lost wake-up for a waiter between its check and its wait
    cv_.notify_all();
  }, &spawn_error);
  if (!child) {
    *error = LaunchError();
    error->kind = LaunchError::Kind::kSpawnFailed;
    error->message = spawn_error;
    return nullptr;
  }
  std::string line;
  Child::FirstLine first = child->WaitFirstLine(options_.handshake_timeout, stopping_, &line);
  // Read before FailChild takes the child.
  const std::string skipped = child->SkippedBeforeHandshake();
  switch (first) {
    case Child::FirstLine::kTimedOut:
      *error = FailChild(std::move(child), LaunchError::Kind::kHandshakeTimeout,
                         "no handshake within " + std::to_string(options_.handshake_timeout.count()) + " ms" + skipped);
      return nullptr;
    case Child::FirstLine::kEof:
      *error = FailChild(std::move(child), LaunchError::Kind::kExitedBeforeHandshake,
                         "stdout closed before a handshake line" + skipped);
      return nullptr;
    case Child::FirstLine::kNoHandshake:
      *error = FailChild(std::move(child), LaunchError::Kind::kMalformedHandshake,
                         "not a game-sidecar: no handshake line within the first " +
                             std::to_string(kHandshakeSkipLines) + " lines / " +
                             std::to_string(kHandshakeSkipBytes) + " bytes of stdout" + skipped);
      return nullptr;
    case Child::FirstLine::kAborted:
      *error = FailChild(std::move(child), LaunchError::Kind::kHandshakeTimeout, "stopped before the handshake");
      return nullptr;
    case Child::FirstLine::kGot: break;
  }
  std::string parse_error;
  if (!ParseHandshake(line, handshake, &parse_error)) {
    *error = FailChild(std::move(child), LaunchError::Kind::kMalformedHandshake,
                       parse_error + ": " + Truncate(line, 200));
    return nullptr;
  }
  return child;
}

ExitInfo::How SidecarProcess::Escalate(Child& child, bool kill_now) {
  if (child.exited()) return ExitInfo::How::kExited;
  if (kill_now) {
    child.Kill();
    child.WaitExited(std::chrono::milliseconds(10000));
    return ExitInfo::How::kKilled;
  }
  child.CloseStdin();
  // The grace in slices: a sidecar found not answering meanwhile is killed at once.
  auto deadline = Clock::now() + options_.exit_grace;
  for (;;) {
    if (child.WaitExited(std::min<std::chrono::milliseconds>(
            kTick, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()))))
      return ExitInfo::How::kExited;
    bool unresponsive;
    {
      std::lock_guard<std::mutex> lock(mu_);
      unresponsive = unresponsive_ && stop_called_;
      if (unresponsive) hung_declared_ = true;
    }
    if (unresponsive) return Escalate(child, true);
    if (Clock::now() >= deadline) break;
  }
  child.Terminate();  // TerminateProcess on Windows: the end there
  if (child.WaitExited(options_.terminate_grace)) return ExitInfo::How::kTerminated;
  child.Kill();
  child.WaitExited(std::chrono::milliseconds(10000));
  return ExitInfo::How::kKilled;
}

LaunchError SidecarProcess::FailChild(std::shared_ptr<Child> child, LaunchError::Kind kind, std::string message) {
  Escalate(*child, false);  // kills a hung or lying child; reaps one that exited
  child->StopReader(std::chrono::milliseconds(500));
  LaunchError e;
  e.kind = kind;
  e.message = std::move(message);
  e.stderr_tail = child->StderrTail();
  if (kind == LaunchError::Kind::kExitedBeforeHandshake && child->status_known()) {
    e.exit_code = child->exit_code();
    e.term_signal = child->term_signal();
    if (e.exit_code >= 0) e.message += " (exit code " + std::to_string(e.exit_code) + ")";
    if (e.term_signal > 0) e.message += " (signal " + std::to_string(e.term_signal) + ")";
    if (e.exit_code == kStateDirLockedExitCode) {
      // The one early exit a game can act on by itself (another instance of
      // the game, or a sidecar left from a crash, still holds the directory).
      e.kind = LaunchError::Kind::kStateDirLocked;
      e.message = "the sidecar exited with code 3 before its handshake: another sidecar holds the lock on its "
                  "--state-dir; stop that one or launch this one with another --state-dir";
    }
  }
  return e;
}

Handshake SidecarProcess::handshake() const {
  std::lock_guard<std::mutex> lock(mu_);
  return handshake_;
}

std::string SidecarProcess::target() const { return GrpcTarget(handshake()); }

int SidecarProcess::pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return child_ ? child_->pid() : -1;
}

std::string SidecarProcess::StderrTail() const {
  std::shared_ptr<Child> child;
  {
    std::lock_guard<std::mutex> lock(mu_);
    child = child_;
  }
  return child ? child->StderrTail() : "";
}

SidecarStatus SidecarProcess::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

ExitInfo SidecarProcess::Stop() {
  std::shared_ptr<Child> child;
  bool kill_now;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_called_) {
      cv_.wait(lock, [this] { return stop_done_; });
      return exit_;
    }
    stop_called_ = true;
    stop_started_ = Clock::now();
    stopping_.store(true);
    child = child_;
    // A sidecar that is not answering gets no grace: stdin EOF and SIGTERM
    // would wait on a process that cannot act on them.
    kill_now = unresponsive_ || hung_declared_;
    if (kill_now) hung_declared_ = true;
  }
  cv_.notify_all();
  ExitInfo::How how = ExitInfo::How::kNotStopped;
  if (child && !child->exited()) how = Escalate(*child, kill_now);
  if (supervisor_.joinable()) supervisor_.join();
  probe_.reset();
  std::lock_guard<std::mutex> lock(mu_);
  if (last_exit_) {
    if (how == ExitInfo::How::kNotStopped) {
      // It had ended before Stop: at the game's request (a Shutdown call), or not.
      how = last_exit_->exit_code ? ExitInfo::How::kExited
            : last_exit_->signal && *last_exit_->signal == SIGTERM ? ExitInfo::How::kTerminated
                                                                   : ExitInfo::How::kKilled;
    }
    exit_.how = last_exit_->requested ? how : ExitInfo::How::kGone;
    if (last_exit_->exit_code) exit_.exit_code = *last_exit_->exit_code;
    if (last_exit_->signal) exit_.term_signal = *last_exit_->signal;
  }
  stop_done_ = true;
  cv_.notify_all();
  return exit_;
}

}  // namespace game_sidecar
