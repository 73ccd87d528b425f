// SidecarProcess, the supervision half: the exit handling, the liveness
// check, the clients' SIDECAR_GONE, the restart, the status and its callbacks.
// The launch and the stop are in sidecar_process.cpp.
#include "game_sidecar/sidecar_process.h"

#include <algorithm>
#include <csignal>
#ifndef _WIN32
#include <dirent.h>
#include <unistd.h>
#endif

#include "connection.h"
#include "liveness_probe.h"
#include "sidecar_child.h"
#include "supervision.h"
#include "tracker_state.h"

namespace game_sidecar {

using internal::Child;
using internal::Clock;
using internal::Connection;
using internal::kExitTailLines;
using internal::kTick;
using internal::ProbeOptions;

void SidecarProcess::on_status(std::function<void(SidecarStatus)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_status_.push_back(std::move(callback));
}

void SidecarProcess::on_exit(std::function<void(const SidecarExit&)> callback) {
  std::optional<SidecarExit> already;
  {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_.push_back(callback);
    if (final_) already = last_exit_;
  }
  // Registered after the final exit: told at once, on this thread.
  if (already) callback(*already);
}

void SidecarProcess::on_restart(std::function<void(const RestartOutcome&)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_restart_.push_back(std::move(callback));
}

bool SidecarProcess::wait_exit(std::chrono::milliseconds timeout, SidecarExit* exit) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return final_; })) return false;
  if (exit != nullptr && last_exit_) *exit = *last_exit_;
  return true;
}

std::optional<SidecarExit> SidecarProcess::last_exit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_exit_;
}

void SidecarProcess::Attach(const std::shared_ptr<Connection>& connection) const {
  // A failure on the connection waits at most this long for the verdict: the
  // hang bound, or without a liveness check only long enough to see an exit.
  connection->Supervise(options_.liveness_interval.count() > 0
                            ? options_.hang_timeout + options_.liveness_timeout + std::chrono::milliseconds(1000)
                            : std::chrono::milliseconds(500));
  bool gone, restarting;
  std::shared_ptr<const SidecarExit> exit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                      [](const std::weak_ptr<Connection>& w) { return w.expired(); }),
                       connections_.end());
    connections_.push_back(connection);
    gone = status_ != SidecarStatus::kReady;
    restarting = status_ == SidecarStatus::kRestarting;
    if (last_exit_) exit = std::make_shared<const SidecarExit>(*last_exit_);
  }
  if (gone) connection->MarkGone(exit, restarting);
}

std::vector<std::shared_ptr<Connection>> SidecarProcess::Connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Connection>> out;
  for (auto& w : connections_)
    if (auto c = w.lock()) out.push_back(std::move(c));
  return out;
}

void SidecarProcess::SetStatus(SidecarStatus status) {
  std::vector<std::function<void(SidecarStatus)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    if (announced_ == status) return;
    announced_ = status;
    callbacks = on_status_;
  }
  cv_.notify_all();
  for (auto& cb : callbacks) cb(status);
}

void SidecarProcess::StartProbe() {
  if (!probe_) return;
  probe_->Start(options_.liveness_timeout, [this](bool answered, bool timed_out, Clock::time_point started) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (answered) {
        last_answer_ = Clock::now();
        last_answer_start_ = std::max(last_answer_start_, started);
        unresponsive_ = false;
      } else if (timed_out) {
        unresponsive_ = true;
      }
    }
    cv_.notify_all();
  });
}

void SidecarProcess::Supervise() {
  internal::t_supervisor_thread = true;
  Clock::time_point next_probe = Clock::now() + options_.liveness_interval;
  Clock::time_point noted_alive{};
  for (;;) {
    bool exited;
    Clock::time_point alive_at, last_answer;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, kTick, [&] { return child_->exited() || last_answer_start_ > noted_alive; });
      exited = child_->exited();
      alive_at = last_answer_start_;
      last_answer = last_answer_;
    }
    if (exited) {
      if (!HandleExit()) return;
      next_probe = Clock::now() + options_.liveness_interval;
      noted_alive = Clock::time_point{};
      continue;
    }
    std::vector<std::shared_ptr<Connection>> connections = Connections();
    if (alive_at > noted_alive) {
      noted_alive = alive_at;
      for (auto& c : connections) c->NoteAlive(alive_at);
    }
    Clock::time_point now = Clock::now();
    for (auto& c : connections) c->Sweep(now);
    if (!probe_) continue;
    if (now >= next_probe) {
      next_probe = now + options_.liveness_interval;
      StartProbe();
    }
    if (!stopping_.load() && now - last_answer > options_.hang_timeout) {
      // Not answering for the hang bound: declared gone. SIGKILL works on a
      // stopped process too; the exit is then handled like any other.
      std::shared_ptr<Child> child;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (hung_declared_) continue;
        hung_declared_ = true;
        child = child_;
      }
      child->Kill();
    }
  }
}

bool SidecarProcess::HandleExit() {
  SidecarExit e;
  std::shared_ptr<Child> child;
  Handshake handshake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    child = child_;
    handshake = handshake_;
    e.hung = hung_declared_;
    e.requested = stop_called_ && stop_started_ <= child->exited_at();
  }
  for (auto& c : Connections()) e.requested = e.requested || c->ShutdownRequested();
  // The last lines it wrote, briefly: the calls in flight must end within
  // 100 ms of the exit, so the reader gets the rest of its drain afterwards.
  child->WaitDrained(std::chrono::milliseconds(30));
  if (child->status_known()) {
    if (child->exit_code() >= 0) e.exit_code = child->exit_code();
    if (child->term_signal() > 0) e.signal = child->term_signal();
  }
  e.stderr_tail = child->StderrTail(kExitTailLines);
  e.pid = child->pid();
  e.endpoint = GrpcTarget(handshake);
  auto exit = std::make_shared<const SidecarExit>(e);
  bool restart = !e.requested && !stopping_.load() && options_.restart.has_value();
  // Whether a restart will be tried, as the gone error says: not when the policy is used up.
  bool will_restart = restart && !PolicyUsedUp(Clock::now());
  std::vector<std::function<void(const SidecarExit&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_exit_ = e;
    callbacks = on_exit_;
  }
  // The status before the clients hear: a call that ends with SIDECAR_GONE
  // never finds status() still kReady. Its notification comes where it always
  // did (after the exit's), below and in Restart.
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = will_restart ? SidecarStatus::kRestarting
                           : stopping_.load() || e.requested ? SidecarStatus::kStopped : SidecarStatus::kFailed;
  }
  // Then the clients: every call in flight ends now with SIDECAR_GONE.
  for (auto& c : Connections()) c->MarkGone(exit, will_restart);
  probe_.reset();
  child->StopReader(std::chrono::milliseconds(200));
  RemoveSocketFolder(handshake);
  for (auto& cb : callbacks) cb(e);
  if (restart && Restart(exit)) return true;
  for (auto& c : Connections()) c->MarkFinal();
  // No restart follows: the writes held for one fail, each reported (WRITE_NOT_APPLIED).
  std::string why = stopping_.load() || e.requested ? "the sidecar was stopped"
                    : !options_.restart                ? "no restart policy"
                                                       : "the restart policy is used up";
  for (auto& c : Connections())
    for (auto& tracker : c->Trackers()) tracker->FailHeld(why, exit);
  // The status first, then wait_exit resolves: a game that waited sees the final status.
  SetStatus(stopping_.load() || e.requested ? SidecarStatus::kStopped : SidecarStatus::kFailed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_ = true;
  }
  cv_.notify_all();
  return false;
}

bool SidecarProcess::Restart(const std::shared_ptr<const SidecarExit>& exit) {
  const RestartPolicy& policy = *options_.restart;
  RestartOutcome outcome;
  outcome.exit = *exit;
  for (;;) {
    Clock::time_point now = Clock::now();
    bool exhausted = PolicyUsedUp(now);
    // "restarting" only when a restart will be tried.
    if (!exhausted) SetStatus(SidecarStatus::kRestarting);
    if (exhausted) {
      if (outcome.error.empty())
        outcome.error = "restart policy exhausted: " + std::to_string(policy.max_restarts) + " restarts within " +
                        std::to_string(policy.window.count()) + " ms";
      break;
    }
    auto backoff = policy.backoff_initial;
    for (size_t i = 0; i < restarts_.size() && backoff < policy.backoff_max; ++i) backoff *= 2;
    backoff = std::min(backoff, policy.backoff_max);
    restarts_.push_back(now);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, backoff, [this] { return stopping_.load(); })) return false;
    }
    ++outcome.attempts;
    Handshake handshake;
    LaunchError error;
    std::shared_ptr<Child> child = LaunchChild(&handshake, &error);
    if (stopping_.load()) return false;
    if (!child) {
      outcome.error = error.ToString();
      continue;
    }
    std::shared_ptr<Child> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old = std::move(child_);
      child_ = std::move(child);
      handshake_ = handshake;
      hung_declared_ = false;
      unresponsive_ = false;
      last_answer_ = last_answer_start_ = Clock::now();
    }
    old.reset();
    std::string target = GrpcTarget(handshake);
    if (options_.liveness_interval.count() > 0)
      probe_ = std::make_unique<internal::LivenessProbe>(target, token_, ProbeOptions());
    else
      probe_.reset();
    std::vector<std::shared_ptr<Connection>> connections = Connections();
    for (auto& c : connections) c->Swap(target);
    // Whether the sessions survived: the new process keeps them only with a state dir.
    std::unique_ptr<internal::LivenessProbe> own;
    internal::LivenessProbe* info_probe = probe_.get();
    if (info_probe == nullptr) {
      own = std::make_unique<internal::LivenessProbe>(target, token_, ProbeOptions());
      info_probe = own.get();
    }
    v1::GetInfoResponse info;
    Status st = info_probe->GetInfo(options_.hang_timeout, &info);
    bool durable = st.ok() && info.durable();
    outcome.sessions_lost = !durable;
    std::vector<std::shared_ptr<internal::TrackerState>> trackers;
    for (auto& c : connections)
      for (auto& tracker : c->Trackers()) trackers.push_back(std::move(tracker));
    for (auto& tracker : trackers) {
      ResumedSession resumed = tracker->Resume();
      if (!resumed.resumed) {
        outcome.sessions_lost = true;
        outcome.lost_sessions.push_back(resumed.session_id);
      }
      outcome.sessions.push_back(std::move(resumed));
    }
    PublishWhenNothingIsHeld(connections, trackers, &outcome);
    outcome.restarted = true;
    SetStatus(SidecarStatus::kReady);
    break;
  }
  std::vector<std::function<void(const RestartOutcome&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callbacks = on_restart_;
  }
  for (auto& cb : callbacks) cb(outcome);
  return outcome.restarted;
}

bool SidecarProcess::PolicyUsedUp(Clock::time_point now) {
  const RestartPolicy& policy = *options_.restart;
  restarts_.erase(std::remove_if(restarts_.begin(), restarts_.end(),
                                 [&](Clock::time_point t) { return now - t > policy.window; }),
                  restarts_.end());
  return static_cast<int>(restarts_.size()) >= policy.max_restarts;
}

void SidecarProcess::PublishWhenNothingIsHeld(const std::vector<std::shared_ptr<Connection>>& connections,
                                              const std::vector<std::shared_ptr<internal::TrackerState>>& trackers,
                                              RestartOutcome* outcome) {
  // The game may write while the sessions resume: those writes are held too.
  // Close the gates (a write now waits instead of being held), send what is
  // held, publish the new process, open the gates: the waiting writes go to
  // the new process after every held one, and the restart ends even when the
  // game writes faster than the held writes can be sent. A write waits at most
  // for the sends of what the game wrote while the sessions resumed.
  for (auto& tracker : trackers) tracker->SetGate(true);
  for (size_t i = 0; i < trackers.size(); ++i) trackers[i]->Flush(&outcome->sessions[i].held);
  // What the sends left (the new process died too) stays held for the next restart.
  for (auto& c : connections) c->Publish();  // the game's calls go to the new process from now on
  for (auto& tracker : trackers) tracker->SetGate(false);
}

void SidecarProcess::RemoveSocketFolder(const Handshake& handshake) const {
  // The folder the sidecar made itself (the default `unix` listen: a fresh
  // 0700 game-sidecar-XXXX in the temp dir); with --listen unix:PATH only the
  // socket file (the folder is the game's).
  if (handshake.transport != "unix") return;
#ifdef _WIN32
  (void)handshake;  // the Windows sidecar refuses `--listen unix`: never reached there
#else
  std::string listen = "unix";  // the default where Unix sockets exist
  for (size_t i = 0; i < options_.args.size(); ++i) {
    const std::string& a = options_.args[i];
    if (a == "--listen" && i + 1 < options_.args.size()) listen = options_.args[i + 1];
    if (a.rfind("--listen=", 0) == 0) listen = a.substr(9);
  }
  if (listen != "unix") {
    unlink(handshake.address.c_str());  // unix:PATH, a socket the game placed (a killed sidecar leaves it)
    return;
  }
  std::string::size_type slash = handshake.address.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  std::string dir = handshake.address.substr(0, slash);
  if (dir.substr(dir.rfind('/') + 1).rfind("game-sidecar-", 0) != 0) return;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
#endif
}

}  // namespace game_sidecar
