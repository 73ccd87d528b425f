// The game_sidecar object: its CallQueue (the worker and the one event queue
// the drain empties) and the process (launch, connect, stop). The drain is the only place C
// callbacks run, so a game touches its objects only on the thread it drains from.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "capi_internal.h"

using game_sidecar_c::PendingEvent;
namespace gs_ns = game_sidecar;

game_sidecar_host::game_sidecar_host() = default;

game_sidecar_host::~game_sidecar_host() {
  // Queued work and undelivered events are dropped without their callbacks;
  // the calls in flight end first (they use this object): the worker's, then
  // each lane's (whatever the worker handed on before it closed).
  calls.Close();
  lanes.Close();
  // Runs next (each destructor cancels and waits for its last callback, whose
  // event the closed queue drops), then the process and client.
  std::map<uint64_t, game_sidecar_c::RunRecord> ending;
  {
    std::lock_guard<std::mutex> lock(sidecar_mu);
    ending.swap(runs);
  }
  for (auto& entry : ending) {
    if (entry.second.handle) entry.second.handle->Cancel();
  }
  ending.clear();
  DoStop();
}

void game_sidecar_host::Post(PendingEvent event) {
  calls.Post([this, event = std::move(event)]() mutable { Deliver(event); });
}

void game_sidecar_host::PostLifecycle(PendingEvent event) {
  {
    std::lock_guard<std::mutex> lock(lifecycle_mu);
    if (lifecycle_callback == nullptr) return;
    event.callback = lifecycle_callback;
    event.user_data = lifecycle_user_data;
  }
  Post(std::move(event));
}

void game_sidecar_host::Submit(std::function<void()> task) { calls.Run(std::move(task)); }

void game_sidecar_host::SubmitBarrier(std::function<void()> task) {
  calls.Run([this, task = std::move(task)] {
    lanes.WaitIdle();
    task();
  });
}

void game_sidecar_host::SubmitForSession(std::string session, std::function<void()> task) {
  calls.Run([this, session = std::move(session), task = std::move(task)]() mutable {
    lanes.Submit(session, std::move(task));
  });
}

std::shared_ptr<gs_ns::SidecarClient> game_sidecar_host::Client() {
  std::lock_guard<std::mutex> lock(sidecar_mu);
  return client;
}

namespace {

const char* LaunchReason(gs_ns::LaunchError::Kind kind) {
  switch (kind) {
    case gs_ns::LaunchError::Kind::kSpawnFailed: return "SPAWN_FAILED";
    case gs_ns::LaunchError::Kind::kExitedBeforeHandshake: return "EXITED_BEFORE_HANDSHAKE";
    case gs_ns::LaunchError::Kind::kHandshakeTimeout: return "HANDSHAKE_TIMEOUT";
    case gs_ns::LaunchError::Kind::kMalformedHandshake: return "MALFORMED_HANDSHAKE";
    case gs_ns::LaunchError::Kind::kStateDirLocked: return "STATE_DIR_LOCKED";
  }
  return "UNKNOWN";
}

int StatusNumber(gs_ns::SidecarStatus status) {
  switch (status) {
    case gs_ns::SidecarStatus::kStarting: return GAME_SIDECAR_STATUS_STARTING;
    case gs_ns::SidecarStatus::kReady: return GAME_SIDECAR_STATUS_READY;
    case gs_ns::SidecarStatus::kRestarting: return GAME_SIDECAR_STATUS_RESTARTING;
    case gs_ns::SidecarStatus::kStopped: return GAME_SIDECAR_STATUS_STOPPED;
    case gs_ns::SidecarStatus::kFailed: return GAME_SIDECAR_STATUS_FAILED;
  }
  return GAME_SIDECAR_STATUS_NONE;
}

// The objects handed to game_sidecar_release whose stop has not finished. Never
// destroyed: a release thread may still count down during static destruction.
struct Releases {
  std::mutex mu;
  std::condition_variable done;
  int pending = 0;
};

Releases& ReleasesInProgress() {
  static Releases* releases = new Releases;
  return *releases;
}

std::string OptionalInt(const std::optional<int>& value) { return value ? std::to_string(*value) : "null"; }

std::string ExitJson(const gs_ns::SidecarExit& exit) {
  using game_sidecar_c::JsonEscape;
  return "{\"exitCode\":" + OptionalInt(exit.exit_code) + ",\"signal\":" + OptionalInt(exit.signal) +
         ",\"requested\":" + (exit.requested ? "true" : "false") + ",\"hung\":" + (exit.hung ? "true" : "false") +
         ",\"pid\":" + std::to_string(exit.pid) + ",\"endpoint\":\"" + JsonEscape(exit.endpoint) +
         "\",\"stderrTail\":\"" + JsonEscape(exit.stderr_tail) + "\",\"description\":\"" +
         JsonEscape(exit.describe()) + "\"}";
}

const char* HowName(gs_ns::ExitInfo::How how) {
  switch (how) {
    case gs_ns::ExitInfo::How::kNotStopped: return "not_stopped";
    case gs_ns::ExitInfo::How::kExited: return "exited";
    case gs_ns::ExitInfo::How::kTerminated: return "terminated";
    case gs_ns::ExitInfo::How::kKilled: return "killed";
    case gs_ns::ExitInfo::How::kGone: return "gone";  // it had ended by itself before the stop
  }
  return "unknown";
}

bool SetOptions(const game_sidecar_launch_options* in, gs_ns::SidecarOptions* out,
                gs_ns::ClientOptions* client_options, std::string* error) {
  // A game built before the restart fields passes the older, smaller size.
  constexpr size_t kFirstSize = offsetof(game_sidecar_launch_options, restart_max);
  if (in == nullptr || in->struct_size < kFirstSize) {
    *error = "launch options missing, or struct_size smaller than any game_sidecar_launch_options";
    return false;
  }
  if (in->struct_size >= sizeof(game_sidecar_launch_options) && in->restart_max != 0) {
    if (in->restart_max < 0 || in->restart_window_ms < 0 || in->restart_backoff_initial_ms < 0 ||
        in->restart_backoff_max_ms < 0) {
      *error = "restart_max and the restart times must not be negative";
      return false;
    }
    gs_ns::RestartPolicy policy;
    policy.max_restarts = in->restart_max;
    if (in->restart_window_ms > 0) policy.window = std::chrono::milliseconds(in->restart_window_ms);
    if (in->restart_backoff_initial_ms > 0) policy.backoff_initial = std::chrono::milliseconds(in->restart_backoff_initial_ms);
    if (in->restart_backoff_max_ms > 0) policy.backoff_max = std::chrono::milliseconds(in->restart_backoff_max_ms);
    out->restart = policy;
  }
  if (in->executable && *in->executable) out->executable = in->executable;
  if (in->args) out->args.assign(in->args, in->args + in->arg_count);
  for (size_t i = 0; i < in->env_count; ++i) {
    std::string entry = in->env[i] ? in->env[i] : "";
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = "env entry " + std::to_string(i) + " is not NAME=value: \"" + entry + "\"";
      return false;
    }
    out->env.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  if (in->working_directory) out->working_directory = in->working_directory;
  if (in->handshake_timeout_ms > 0) out->handshake_timeout = std::chrono::milliseconds(in->handshake_timeout_ms);
  if (in->exit_grace_ms > 0) out->exit_grace = std::chrono::milliseconds(in->exit_grace_ms);
  if (in->terminate_grace_ms > 0) out->terminate_grace = std::chrono::milliseconds(in->terminate_grace_ms);
  if (in->call_timeout_ms > 0) client_options->call_timeout = std::chrono::milliseconds(in->call_timeout_ms);
  if (in->call_timeout_ms < 0) client_options->call_timeout = std::chrono::milliseconds(0);
  return true;
}

}  // namespace

std::unique_ptr<game_sidecar_result> game_sidecar_host::DoLaunch(const gs_ns::SidecarOptions& options,
                                                            gs_ns::ClientOptions client_options) {
  // A process that ended with no restart to follow (FAILED, or STOPPED by a Shutdown
  // call) is over: a launch replaces it rather than being refused until a stop.
  std::unique_ptr<gs_ns::SidecarProcess> ended;
  std::shared_ptr<gs_ns::SidecarClient> ended_client;
  std::map<std::string, game_sidecar_c::TrackedRecord> ended_tracked;
  {
    std::lock_guard<std::mutex> lock(sidecar_mu);
    if (process && (process->status() == gs_ns::SidecarStatus::kFailed ||
                    process->status() == gs_ns::SidecarStatus::kStopped)) {
      ended = std::move(process);
      ended_client = std::move(client);
      ended_tracked.swap(tracked);  // they belong to the ended process: the game tracks them again
    }
    if (process || client) {
      return game_sidecar_c::LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "a sidecar is already launched or connected");
    }
  }
  if (ended) ended->Stop();  // it has exited: this reaps it and ends its supervision
  gs_ns::LaunchError error;
  std::unique_ptr<gs_ns::SidecarProcess> launched = gs_ns::SidecarProcess::Launch(options, &error);
  if (!launched) {
    auto result = game_sidecar_c::LocalError(GAME_SIDECAR_UNAVAILABLE, LaunchReason(error.kind),
                                             std::string(gs_ns::LaunchErrorKindName(error.kind)) +
                                                 (error.message.empty() ? "" : ": " + error.message));
    result->stderr_tail = error.stderr_tail;
    return result;
  }
  // Found on the supervisor thread; like everything else they reach the game through the drain.
  launched->on_status([this](gs_ns::SidecarStatus status) {
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_STATUS;
    event.status = StatusNumber(status);
    event.event_json = std::string("{\"status\":\"") + gs_ns::SidecarStatusName(status) + "\"}";
    PostLifecycle(std::move(event));
  });
  // The exit comes first, then STATUS: FAILED, STOPPED, or RESTARTING when a restart follows.
  launched->on_exit([this](const gs_ns::SidecarExit& exit) {
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_EXIT;
    event.event_json = ExitJson(exit);
    PostLifecycle(std::move(event));
  });
  auto made = std::make_shared<gs_ns::SidecarClient>(*launched, client_options);
  const gs_ns::Handshake& h = launched->handshake();
  auto result = std::make_unique<game_sidecar_result>();
  result->json = "{\"transport\":\"" + game_sidecar_c::JsonEscape(h.transport) + "\",\"address\":\"" +
                 game_sidecar_c::JsonEscape(h.address) + "\",\"target\":\"" +
                 game_sidecar_c::JsonEscape(launched->target()) + "\",\"pid\":" + std::to_string(h.pid) +
                 ",\"version\":\"" + game_sidecar_c::JsonEscape(h.version) + "\"}";
  std::lock_guard<std::mutex> lock(sidecar_mu);
  process = std::move(launched);
  client = std::move(made);
  return result;
}

std::unique_ptr<game_sidecar_result> game_sidecar_host::DoStop() {
  std::unique_ptr<gs_ns::SidecarProcess> stopping;
  std::shared_ptr<gs_ns::SidecarClient> dropping;
  std::map<std::string, game_sidecar_c::TrackedRecord> untracked;
  {
    std::lock_guard<std::mutex> lock(sidecar_mu);
    stopping = std::move(process);
    dropping = std::move(client);
    untracked.swap(tracked);
  }
  auto result = std::make_unique<game_sidecar_result>();
  if (!stopping) {
    result->json = "{\"how\":\"not_stopped\",\"exitCode\":-1,\"signal\":0}";
    return result;
  }
  gs_ns::ExitInfo exit = stopping->Stop();
  result->json = std::string("{\"how\":\"") + HowName(exit.how) + "\",\"exitCode\":" + std::to_string(exit.exit_code) +
                 ",\"signal\":" + std::to_string(exit.term_signal) + "}";
  return result;
}

void game_sidecar_host::Deliver(PendingEvent& e) {
  for (size_t i = 0; i < e.mentions.size(); ++i) e.mentions[i].entity_id = e.mention_ids[i].c_str();
  game_sidecar_event view{};
  view.kind = e.kind;
  view.handle = e.handle;
  view.result = e.result.get();
  view.run_kind = e.run_kind;
  view.run_id = e.run_id.c_str();
  view.seq = e.seq;
  view.text = e.text.c_str();
  view.sentence_end = e.sentence_end ? 1 : 0;
  view.mentions = e.mentions.empty() ? nullptr : e.mentions.data();
  view.mention_count = e.mentions.size();
  view.action_id = e.action_id.c_str();
  view.event_json = e.event_json.c_str();
  view.status = e.status;
  if (e.callback) e.callback(&view, e.user_data);
  if (!e.final_run_event) return;
  // The handle's destructor waits for the run's last callback to return
  // (microseconds here, but still a wait): it happens on the worker.
  std::unique_ptr<gs_ns::RunHandle> done;
  {
    std::lock_guard<std::mutex> lock(sidecar_mu);
    auto it = runs.find(e.handle);
    if (it != runs.end()) {
      done = std::move(it->second.handle);
      runs.erase(it);
    }
  }
  if (done) {
    // After kFinished the stream's own end may still be to come: the
    // destructor cancels it (the run reports nothing more) and waits for it.
    std::shared_ptr<gs_ns::RunHandle> parked(done.release());
    Submit([parked]() mutable { parked.reset(); });
  }
}

extern "C" {

int game_sidecar_abi_version(void) { return GAME_SIDECAR_C_ABI_VERSION; }

game_sidecar_host* game_sidecar_create(void) { return new (std::nothrow) game_sidecar_host(); }

void game_sidecar_destroy(game_sidecar_host* gs) { delete gs; }

void game_sidecar_release(game_sidecar_host* gs) {
  if (gs == nullptr) return;
  Releases& releases = ReleasesInProgress();
  {
    std::lock_guard<std::mutex> lock(releases.mu);
    ++releases.pending;
  }
  auto finish = [gs, &releases] {
    delete gs;  // the orderly stop: up to exit_grace + terminate_grace
    std::lock_guard<std::mutex> lock(releases.mu);
    --releases.pending;
    releases.done.notify_all();
  };
  try {
    // Detached: game_sidecar_wait_released is the join, for whoever unloads the library.
    std::thread(finish).detach();
  } catch (const std::system_error&) {
    finish();  // no thread to be had: the stop blocks, as game_sidecar_destroy's does
  }
}

int game_sidecar_wait_released(int32_t timeout_ms) {
  Releases& releases = ReleasesInProgress();
  std::unique_lock<std::mutex> lock(releases.mu);
  auto none = [&releases] { return releases.pending == 0; };
  if (timeout_ms < 0) {
    releases.done.wait(lock, none);
  } else {
    releases.done.wait_for(lock, std::chrono::milliseconds(timeout_ms), none);
  }
  return releases.pending;
}

game_sidecar_result* game_sidecar_launch(game_sidecar_host* gs, const game_sidecar_launch_options* options) {
  gs_ns::SidecarOptions sidecar_options;
  gs_ns::ClientOptions client_options;
  std::string error;
  if (!SetOptions(options, &sidecar_options, &client_options, &error)) {
    return game_sidecar_c::LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error).release();
  }
  if (options->on_log) {
    game_sidecar_callback log = options->on_log;
    void* user_data = options->log_user_data;
    sidecar_options.on_log = [gs, log, user_data](const std::string& line) {
      PendingEvent event;
      event.kind = GAME_SIDECAR_EVENT_LOG;
      event.callback = log;
      event.user_data = user_data;
      event.text = line;
      gs->Post(std::move(event));
    };
  }
  return gs->DoLaunch(sidecar_options, client_options).release();
}

uint64_t game_sidecar_launch_async(game_sidecar_host* gs, const game_sidecar_launch_options* options,
                                   game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  // Options are copied now: the game's strings may be gone when the worker runs.
  gs_ns::SidecarOptions sidecar_options;
  gs_ns::ClientOptions client_options;
  std::string error;
  bool ok = SetOptions(options, &sidecar_options, &client_options, &error);
  if (ok && options->on_log) {
    game_sidecar_callback log = options->on_log;
    void* log_data = options->log_user_data;
    sidecar_options.on_log = [gs, log, log_data](const std::string& line) {
      PendingEvent event;
      event.kind = GAME_SIDECAR_EVENT_LOG;
      event.callback = log;
      event.user_data = log_data;
      event.text = line;
      gs->Post(std::move(event));
    };
  }
  gs->SubmitBarrier([gs, handle, callback, user_data, ok, error, sidecar_options, client_options] {
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_LAUNCHED;
    event.handle = handle;
    event.callback = callback;
    event.user_data = user_data;
    event.result = ok ? gs->DoLaunch(sidecar_options, client_options)
                      : game_sidecar_c::LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error);
    gs->Post(std::move(event));
  });
  return handle;
}

game_sidecar_result* game_sidecar_connect(game_sidecar_host* gs, const char* target, const char* token,
                                          int32_t call_timeout_ms) {
  if (target == nullptr || *target == '\0') {
    return game_sidecar_c::LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", "target is empty").release();
  }
  gs_ns::ClientOptions options;
  if (call_timeout_ms > 0) options.call_timeout = std::chrono::milliseconds(call_timeout_ms);
  if (call_timeout_ms < 0) options.call_timeout = std::chrono::milliseconds(0);
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  if (gs->process || gs->client) {
    return game_sidecar_c::LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "a sidecar is already launched or connected")
        .release();
  }
  gs->client = std::make_shared<gs_ns::SidecarClient>(target, token ? token : "", options);
  auto result = std::make_unique<game_sidecar_result>();
  result->json = "{\"target\":\"" + game_sidecar_c::JsonEscape(target) + "\"}";
  return result.release();
}

void game_sidecar_set_lifecycle_callback(game_sidecar_host* gs, game_sidecar_callback callback, void* user_data) {
  std::lock_guard<std::mutex> lock(gs->lifecycle_mu);
  gs->lifecycle_callback = callback;
  gs->lifecycle_user_data = user_data;
}

int game_sidecar_get_status(const game_sidecar_host* gs) {
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  return gs->process ? StatusNumber(gs->process->status()) : GAME_SIDECAR_STATUS_NONE;
}

int game_sidecar_pid(const game_sidecar_host* gs) {
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  return gs->process ? gs->process->pid() : 0;
}

game_sidecar_result* game_sidecar_stop(game_sidecar_host* gs) { return gs->DoStop().release(); }

uint64_t game_sidecar_stop_async(game_sidecar_host* gs, game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  gs->SubmitBarrier([gs, handle, callback, user_data] {
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_STOPPED;
    event.handle = handle;
    event.callback = callback;
    event.user_data = user_data;
    event.result = gs->DoStop();
    gs->Post(std::move(event));
  });
  return handle;
}

size_t game_sidecar_drain(game_sidecar_host* gs, size_t max) {
  // The queue takes a bounded slice and runs the callbacks without its lock,
  // so a callback may start calls (which post) and a drain never chases new events.
  return gs->calls.Drain(max == 0 ? SIZE_MAX : max);
}

int game_sidecar_wait_event(game_sidecar_host* gs, int32_t timeout_ms) {
  return gs->calls.WaitReady(std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms)) ? 1 : 0;
}

}  // extern "C"
