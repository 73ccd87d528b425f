// Connection: channel setup, the token on every call, and what the supervising
// SidecarProcess does to it at an exit and a restart.
#include "connection.h"
#include "tracker_state.h"

#include <algorithm>

namespace game_sidecar {
namespace internal {

thread_local bool t_supervisor_thread = false;

namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, const ClientOptions& options) {
  grpc::ChannelArguments args;
  // The sidecar is local: an http_proxy in the game's environment must not reroute it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  // A local sidecar that restarted should be reachable again quickly.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Keepalive: a sidecar that stops answering (SIGSTOP, a deadlock) breaks the
  // transport within keepalive time + timeout, even with no call in flight. The
  // sidecar's server must permit pings this often (sidecar/server.py), or it
  // answers GOAWAY too_many_pings.
  if (options.keepalive.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(options.keepalive.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  // Plaintext is safe: a 0700 Unix socket or loopback, plus the per-launch token.
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

Link::Link(std::string t, const ClientOptions& options, uint64_t g)
    : target(std::move(t)),
      generation(g),
      channel(MakeChannel(target, options)),
      sidecar(v1::SidecarService::NewStub(channel)),
      sessions(v1::SessionService::NewStub(channel)),
      agent(v1::AgentService::NewStub(channel)) {}

Status GoneStatus(const std::shared_ptr<const SidecarExit>& exit, const std::string& endpoint, bool restarting) {
  const std::string& where = exit && !exit->endpoint.empty() ? exit->endpoint : endpoint;
  std::string message = "the sidecar at " + where + " is gone";
  if (exit) message += ": " + exit->describe();
  if (restarting) message += " (restarting: retry after the restart)";
  Status s = Status::Local(StatusCode::kUnavailable, "SIDECAR_GONE", std::move(message));
  s.metadata["endpoint"] = where;
  if (exit) {
    if (exit->exit_code) s.metadata["exit_code"] = std::to_string(*exit->exit_code);
    if (exit->signal) s.metadata["signal"] = std::to_string(*exit->signal);
    s.metadata["requested"] = exit->requested ? "true" : "false";
    s.metadata["hung"] = exit->hung ? "true" : "false";
  }
  s.metadata["will_restart"] = restarting ? "true" : "false";
  s.sidecar_exit = exit;
  s.sidecar_will_restart = restarting;
  return s;
}

Connection::Connection(const std::string& target, std::string token, ClientOptions options)
    : token_(std::move(token)),
      options_(options),
      link_(std::make_shared<Link>(target, options_, 1)),
      endpoint_(target) {}

std::shared_ptr<Link> Connection::Acquire(grpc::ClientContext* context, bool unary, Status* gone) {
  // Plain metadata, not call credentials: gRPC drops those on insecure channels.
  context->AddMetadata("authorization", "Bearer " + token_);
  if (unary && options_.call_timeout.count() > 0)
    context->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Link> link = !link_ && t_supervisor_thread ? next_link_ : link_;
  if (!link) {
    *gone = GoneStatus(exit_, endpoint_, restarting_);
    return nullptr;
  }
  in_flight_.insert(context);
  return link;
}

void Connection::Release(grpc::ClientContext* context) {
  std::unique_lock<std::mutex> lock(mu_);
  in_flight_.erase(context);
  // MarkGone may be about to cancel this context outside the lock: its call
  // must not free it before that (unless it is MarkGone's own thread, when gRPC
  // finished the call inline in TryCancel).
  cv_.wait(lock, [this] { return !cancelling_ || canceller_ == std::this_thread::get_id(); });
}

bool Connection::LooksLost(const Status& status, bool cancelled_by_caller) const {
  if (!status.reason.empty()) return false;  // the sidecar answered with a reason
  switch (status.code) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnknown:
    case StatusCode::kInternal:  // a stream cut mid-message
      return true;
    case StatusCode::kCancelled: return !cancelled_by_caller;
    default: return false;
  }
}

bool Connection::VerdictLocked(const Status& status, uint64_t generation, Clock::time_point failed_at,
                               Status* out) const {
  if (generation <= gone_generation_) {
    *out = GoneStatus(exit_, endpoint_, restarting_ && generation == gone_generation_);
    return true;
  }
  if (last_alive_ > failed_at) {  // the process answered after the failure: not an exit
    *out = status;
    return true;
  }
  return false;
}

Status Connection::Settle(Status status, const Link& link, bool cancelled_by_caller) {
  // An answer from the sidecar (OK, or an error with its reason) stands as it is.
  if (status.ok() || !LooksLost(status, cancelled_by_caller)) return status;
  Clock::time_point failed_at = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  Status verdict;
  if (link.generation <= gone_generation_) {
    VerdictLocked(status, link.generation, failed_at, &verdict);
    return verdict;
  }
  if (!supervised_ || t_supervisor_thread) return status;
  bool decided = cv_.wait_until(lock, failed_at + verdict_limit_, [&] {
    return VerdictLocked(status, link.generation, failed_at, &verdict);
  });
  return decided ? verdict : status;
}

void Connection::SettleLater(Status status, const Link& link, bool cancelled_by_caller,
                             std::function<void(Status)> done) {
  if (!status.ok() && LooksLost(status, cancelled_by_caller)) {
    Clock::time_point failed_at = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    Status verdict;
    if (link.generation <= gone_generation_) {
      VerdictLocked(status, link.generation, failed_at, &verdict);
      status = verdict;
    } else if (supervised_ && !t_supervisor_thread) {
      waiting_.push_back({std::move(status), link.generation, failed_at, failed_at + verdict_limit_, std::move(done)});
      return;
    }
  }
  done(std::move(status));
}

bool Connection::IsGone(Status* gone) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (link_) return false;
  *gone = GoneStatus(exit_, endpoint_, restarting_);
  return true;
}

std::shared_ptr<Link> Connection::link() const {
  std::lock_guard<std::mutex> lock(mu_);
  return link_;
}

std::string Connection::endpoint() const {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoint_;
}

void Connection::Supervise(std::chrono::milliseconds verdict_limit) {
  std::lock_guard<std::mutex> lock(mu_);
  supervised_ = true;
  verdict_limit_ = verdict_limit;
  last_alive_ = Clock::now();
}

void Connection::MarkGone(std::shared_ptr<const SidecarExit> exit, bool restarting) {
  std::vector<Waiting> settled;
  std::vector<grpc::ClientContext*> cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exit_ = std::move(exit);
    restarting_ = restarting;
    gone_generation_ = generation_;
    link_.reset();
    next_link_.reset();
    cancel.assign(in_flight_.begin(), in_flight_.end());
    cancelling_ = true;
    canceller_ = std::this_thread::get_id();
    settled.swap(waiting_);
    for (auto& w : settled) {
      Status verdict;
      if (VerdictLocked(w.status, w.generation, w.failed_at, &verdict)) w.status = verdict;
    }
  }
  // Every call in flight ends now (with CANCELLED, which Settle turns into
  // SIDECAR_GONE). Outside the lock: gRPC may finish a call inline.
  for (grpc::ClientContext* context : cancel) context->TryCancel();
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelling_ = false;
  }
  cv_.notify_all();
  for (auto& w : settled) w.done(std::move(w.status));
}

void Connection::MarkFinal() {
  std::lock_guard<std::mutex> lock(mu_);
  restarting_ = false;
}

void Connection::Swap(const std::string& target) {
  auto link = std::make_shared<Link>(target, options_, generation_ + 1);
  link->channel->GetState(true);  // start connecting now: the first call after READY does not wait for it
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = link->generation;
  endpoint_ = target;
  next_link_ = std::move(link);
}

void Connection::Publish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!next_link_) return;
  link_ = std::move(next_link_);
  restarting_ = false;
}

void Connection::NoteAlive(Clock::time_point when) {
  std::vector<Waiting> settled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_alive_ = std::max(last_alive_, when);
    auto keep = std::partition(waiting_.begin(), waiting_.end(), [&](Waiting& w) {
      Status verdict;
      if (!VerdictLocked(w.status, w.generation, w.failed_at, &verdict)) return true;
      w.status = verdict;
      return false;
    });
    settled.assign(std::make_move_iterator(keep), std::make_move_iterator(waiting_.end()));
    waiting_.erase(keep, waiting_.end());
  }
  cv_.notify_all();
  for (auto& w : settled) w.done(std::move(w.status));
}

void Connection::Sweep(Clock::time_point now) {
  std::vector<Waiting> settled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto keep = std::partition(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.limit > now; });
    settled.assign(std::make_move_iterator(keep), std::make_move_iterator(waiting_.end()));
    waiting_.erase(keep, waiting_.end());
  }
  for (auto& w : settled) w.done(std::move(w.status));
}

void Connection::NoteShutdownRequested() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_generation_ = generation_;
}

bool Connection::ShutdownRequested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_generation_ == generation_;
}

std::shared_ptr<TrackerState> Connection::AddTracker(std::shared_ptr<TrackerState> tracker) {
  std::lock_guard<std::mutex> lock(mu_);
  trackers_.erase(std::remove_if(trackers_.begin(), trackers_.end(),
                                 [](const std::weak_ptr<TrackerState>& w) { return w.expired(); }),
                  trackers_.end());
  for (auto& w : trackers_)
    if (auto t = w.lock(); t && t->session_id() == tracker->session_id()) return t;
  trackers_.push_back(tracker);
  return tracker;
}

std::shared_ptr<TrackerState> Connection::FindTracker(const std::string& session_id) {
  if (session_id.empty()) return nullptr;  // the sidecar names it: a new session
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : trackers_)
    if (auto t = w.lock(); t && t->session_id() == session_id) return t;
  return nullptr;
}

std::vector<std::shared_ptr<TrackerState>> Connection::Trackers() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<TrackerState>> out;
  for (auto& w : trackers_)
    if (auto t = w.lock()) out.push_back(std::move(t));
  return out;
}

}  // namespace internal
}  // namespace game_sidecar
