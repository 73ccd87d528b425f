// TrackedSession and its TrackerState: revision tracking, the unacknowledged
// batch, and the re-open after a restart.
#include "game_sidecar/tracked_session.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>

#include "tracker_state.h"
#include "world_upload.h"

namespace game_sidecar {
namespace internal {
namespace {

// The sidecar said nothing about this batch: it may or may not have been applied.
bool Unanswered(const Status& st) {
  if (st.sidecar_gone()) return true;
  if (!st.reason.empty()) return false;
  return st.code == StatusCode::kUnavailable || st.code == StatusCode::kDeadlineExceeded ||
         st.code == StatusCode::kCancelled || st.code == StatusCode::kUnknown;
}

Status KeptStatus(const Status& gone, const std::string& session_id, const std::string& delta_id) {
  Status s = gone;
  s.reason = "WRITE_KEPT";
  s.sidecar_will_restart = true;
  s.metadata["will_restart"] = "true";
  s.metadata["delta_id"] = delta_id;
  s.message = "batch " + delta_id + " of session " + session_id +
              " is kept and sent once the session is re-opened: do not send it again (" + gone.message + ")";
  return s;
}

}  // namespace

Status TrackerState::LostStatus() const {
  return Status::Local(StatusCode::kFailedPrecondition, "",
                       "session " + open_.session_id() + " was lost in a sidecar restart; resync it with ReplaceState first");
}

TrackerState::TrackerState(std::shared_ptr<Connection> connection, v1::OpenSessionRequest open, int64_t revision,
                           std::string prefix)
    : connection_(std::move(connection)),
      open_(std::move(open)),
      prefix_(std::move(prefix)),
      revision_(revision),
      max_held_(TrackedSession::kMaxHeld) {}

int64_t TrackerState::revision() const {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}

bool TrackerState::lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

std::string TrackerState::pending_delta_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_ ? pending_->delta_id() : "";
}

size_t TrackerState::held_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

void TrackerState::set_max_held(size_t max_held) {
  std::lock_guard<std::mutex> lock(mu_);
  max_held_ = max_held;
}

void TrackerState::Acknowledge(int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  revision_ = std::max(revision_, revision);
  pending_.reset();
}

void TrackerState::SetOnPending(std::function<void(const ResumedSession&)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_pending_ = std::move(callback);
}

void TrackerState::Report(const ResumedSession& settled) {
  std::function<void(const ResumedSession&)> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callback = on_pending_;
  }
  if (callback) callback(settled);
}

Status TrackerState::NotApplied(const std::string& delta_id, const std::string& why,
                                std::shared_ptr<const SidecarExit> exit) const {
  Status s = Status::Local(StatusCode::kAborted, "WRITE_NOT_APPLIED",
                           "batch " + delta_id + " of session " + open_.session_id() + " was not applied: " + why);
  s.metadata["delta_id"] = delta_id;
  s.sidecar_exit = std::move(exit);
  return s;
}

Status TrackerState::HoldLocked(v1::ApplyDeltasRequest request, uint64_t order, const Status& gone_now) {
  const std::string& id = request.delta_id();
  Status gone = gone_now;
  if (!gone.sidecar_gone()) {
    // Up, with writes still held: the restarted process died before it took
    // them all; the next restart sends them (or, if none follows, they fail).
    gone = Status::Local(StatusCode::kUnavailable, "SIDECAR_GONE",
                         "the restarted sidecar has not taken the writes held before this one");
    gone.sidecar_will_restart = true;
  }
  if (!gone.sidecar_will_restart)
    return NotApplied(id, "the sidecar is gone and no restart follows", gone.sidecar_exit);
  if (held_.size() >= max_held_)
    return NotApplied(id,
                      std::to_string(held_.size()) +
                          " writes are already held while the sidecar restarts (max_held); they are kept",
                      gone.sidecar_exit);
  // By the order written: an Apply that waited for its turn was written before
  // a write held meanwhile without waiting.
  auto at = std::upper_bound(held_.begin(), held_.end(), order,
                             [](uint64_t o, const Held& h) { return o < h.order; });
  Status kept = KeptStatus(gone, open_.session_id(), id);
  held_.insert(at, Held{std::move(request), order});
  return kept;
}

ResumedSession::Pending TrackerState::ResendPending(Status* status) {
  ResumedSession::Pending result = ResendPendingOnce(status);
  if (result != ResumedSession::Pending::kNone && !(result == ResumedSession::Pending::kNotApplied && Unanswered(*status))) {
    ResumedSession settled;
    settled.session_id = open_.session_id();
    settled.resumed = true;
    settled.revision = revision();
    settled.pending = result;
    settled.pending_delta_id = last_resent_id_;
    if (result == ResumedSession::Pending::kNotApplied) settled.pending_status = *status;
    Report(settled);
  }
  return result;
}

ResumedSession::Pending TrackerState::ResendPendingOnce(Status* status) {
  v1::ApplyDeltasRequest request;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_) return ResumedSession::Pending::kNone;
    request = *pending_;
    last_resent_id_ = request.delta_id();
    // Its original base: the replay check comes before the base check, so an
    // applied batch answers replayed = true with the revision it produced.
    request.set_base_revision(revision_);
  }
  v1::ApplyDeltasResponse response;
  Status st = connection_->Unary(&Link::sessions, &v1::SessionService::Stub::ApplyDeltas, request, &response);
  *status = st;
  if (st.ok()) {
    Acknowledge(response.revision());
    return response.replayed() ? ResumedSession::Pending::kReplayed : ResumedSession::Pending::kAppliedNow;
  }
  if (Unanswered(st)) return ResumedSession::Pending::kNotApplied;  // still pending
  std::lock_guard<std::mutex> lock(mu_);
  pending_.reset();  // refused: not applied, and never will be by us
  FollowStaleLocked(st);
  return ResumedSession::Pending::kNotApplied;
}

void TrackerState::WaitForLine() {
  std::unique_lock<std::mutex> lock(mu_);
  line_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return in_line_ == 0; });
}

void TrackerState::SetGate(bool closed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    gate_closed_ = closed;
  }
  line_cv_.notify_all();
}

Status TrackerState::Apply(v1::ApplyDeltasRequest request, v1::ApplyDeltasResponse* response) {
  uint64_t order;
  {
    std::unique_lock<std::mutex> lock(mu_);
    line_cv_.wait(lock, [this] { return !gate_closed_; });  // the last writes of a restart are being sent
    if (lost_) return LostStatus();
    if (request.delta_id().empty()) request.set_delta_id(prefix_ + "-" + std::to_string(next_id_++));
    request.set_session_id(open_.session_id());
    order = next_order_++;
    Status gone;
    // Gone, restarting (the new process is not published before its sessions
    // are resumed and nothing is held), or behind held writes: hold, in order.
    if (connection_->IsGone(&gone) || !held_.empty()) return HoldLocked(std::move(request), order, gone);
    ++in_line_;
  }
  struct LeaveLine {
    TrackerState* self;
    ~LeaveLine() {
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        --self->in_line_;
      }
      self->line_cv_.notify_all();
    }
  } leave{this};
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status gone;
    if (connection_->IsGone(&gone) || !held_.empty()) return HoldLocked(std::move(request), order, gone);
    if (lost_) return LostStatus();
  }
  Status resend;
  std::string pending_id = pending_delta_id();
  if (!pending_id.empty() && ResendPending(&resend) == ResumedSession::Pending::kNotApplied) {
    if (resend.sidecar_gone()) {  // it is still pending; this one goes behind it
      std::lock_guard<std::mutex> lock(mu_);
      return HoldLocked(std::move(request), order, resend);
    }
    if (Unanswered(resend)) return resend;
    Status s = resend;
    s.message = "the unacknowledged batch " + pending_id + " was not applied (" + resend.message +
                "); this batch was not sent";
    return s;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    request.set_base_revision(revision_);
  }
  v1::ApplyDeltasResponse scratch;
  if (response == nullptr) response = &scratch;
  Status st = connection_->Unary(&Link::sessions, &v1::SessionService::Stub::ApplyDeltas, request, response);
  if (st.ok()) {
    Acknowledge(response->revision());
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (Unanswered(st)) {
    std::string id = request.delta_id();
    pending_ = std::move(request);
    if (st.sidecar_gone() && st.sidecar_will_restart) return KeptStatus(st, open_.session_id(), id);
  } else {
    FollowStaleLocked(st);
  }
  return st;
}

Status TrackerState::ReplaceState(v1::ReplaceStateRequest request, v1::ReplaceStateResponse* response) {
  std::lock_guard<std::mutex> call(call_mu_);
  request.set_session_id(open_.session_id());
  v1::ReplaceStateResponse scratch;
  if (response == nullptr) response = &scratch;
  Status st = ReplaceWorld(*connection_, request, response);  // in pieces when the world is big
  if (st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    revision_ = response->revision();  // a resync or a rewind may move it back
    pending_.reset();
    lost_ = false;
  }
  return st;
}

void TrackerState::FollowStaleLocked(const Status& st) {
  if (st.reason != "STALE_REVISION") return;
  auto it = st.metadata.find("current_revision");
  if (it != st.metadata.end()) revision_ = std::strtoll(it->second.c_str(), nullptr, 10);
}

void TrackerState::FailHeld(const std::string& why, const std::shared_ptr<const SidecarExit>& exit) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& h : held_) ids.push_back(h.request.delta_id());
    held_.clear();
  }
  for (const std::string& id : ids) {
    ResumedSession settled;
    settled.session_id = open_.session_id();
    settled.revision = revision();
    settled.pending = ResumedSession::Pending::kNotApplied;
    settled.pending_delta_id = id;
    settled.pending_status = NotApplied(id, why, exit);
    Report(settled);
  }
}

void TrackerState::FlushHeld(std::vector<ResumedSession::Held>* sent, size_t count) {
  for (size_t n = 0; n < count; ++n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (held_.empty() || pending_ || lost_) return;
      pending_ = std::move(held_.front().request);  // if the sidecar dies now, the next restart resends it
      held_.pop_front();
    }
    ResumedSession::Held one;
    Status st;
    one.outcome = ResendPending(&st);
    one.delta_id = last_resent_id_;
    one.revision = revision();
    if (one.outcome == ResumedSession::Pending::kNotApplied) {
      if (Unanswered(st)) return;  // gone again: it stays pending for the next restart
      one.status = st;
    }
    if (sent != nullptr) sent->push_back(std::move(one));
  }
}

void TrackerState::Flush(std::vector<ResumedSession::Held>* held) {
  WaitForLine();
  std::lock_guard<std::mutex> call(call_mu_);
  FlushHeld(held, SIZE_MAX);  // the gate is closed: nothing comes in behind them
}

ResumedSession TrackerState::Resume() {
  WaitForLine();
  std::lock_guard<std::mutex> call(call_mu_);
  ResumedSession out;
  out.session_id = open_.session_id();
  out.pending_delta_id = pending_delta_id();
  v1::OpenSessionResponse opened;
  Status st = connection_->Unary(&Link::sessions, &v1::SessionService::Stub::OpenSession, open_, &opened);
  bool behind;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // With a state dir the journal holds at least every acknowledged batch; a
    // session behind that was lost too (another writer, a deleted journal).
    behind = st.ok() && opened.revision() < revision_;
  }
  if (!st.ok() || opened.created() || behind) {
    // The new process does not have it (no --state-dir): the game resyncs with
    // ReplaceState; a pending batch went with the lost state.
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (st.ok()) {
        revision_ = opened.revision();
        lost_ = true;
      }
      if (pending_) {
        out.pending = ResumedSession::Pending::kNotApplied;
        out.pending_status = st.ok() ? Status::Local(StatusCode::kFailedPrecondition, "",
                                                     "the session was lost in the restart; resync it with ReplaceState")
                                     : st;
        if (st.ok()) pending_.reset();
      }
      out.revision = revision_;
    }
    if (out.pending != ResumedSession::Pending::kNone && st.ok()) Report(out);
    if (st.ok()) FailHeld("the session was lost in the restart", nullptr);
    return out;
  }
  out.resumed = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Without a pending batch the journal holds exactly what was acknowledged
    // (an acknowledgement follows the commit), so this is the same revision.
    if (!pending_) revision_ = opened.revision();
  }
  out.pending = ResendPending(&out.pending_status);
  if (out.pending != ResumedSession::Pending::kNotApplied) out.pending_status = Status::Ok();
  // Only what is held now: the game may write as fast as these are sent (Flush
  // sends the rest with the gate closed).
  if (!(out.pending == ResumedSession::Pending::kNotApplied && Unanswered(out.pending_status)))
    FlushHeld(&out.held, held_count());
  out.revision = revision();
  return out;
}

}  // namespace internal

TrackedSession::TrackedSession(std::shared_ptr<internal::TrackerState> state) : state_(std::move(state)) {}

TrackedSession::~TrackedSession() = default;

std::unique_ptr<TrackedSession> TrackedSession::Open(SidecarClient& client, const v1::OpenSessionRequest& request,
                                                     Status* status, std::string delta_prefix) {
  // One tracked state per session: a second Open shares it (its writes stay in one queue).
  if (auto tracked = client.connection_->FindTracker(request.session_id())) {
    if (status != nullptr) *status = Status::Ok();
    return std::unique_ptr<TrackedSession>(new TrackedSession(std::move(tracked)));
  }
  v1::OpenSessionResponse opened;
  Status st = client.OpenSession(request, &opened);
  if (status != nullptr) *status = st;
  if (!st.ok()) return nullptr;
  if (delta_prefix.empty()) {
    // Unique per handle, so a game that tracks the same session again (or
    // runs again) never reuses an ID the sidecar remembers.
    static const char kHex[] = "0123456789abcdef";
    std::random_device rd;
    uint32_t v = rd();
    delta_prefix = request.session_id() + "-";
    for (int i = 0; i < 8; ++i, v >>= 4) delta_prefix.push_back(kHex[v & 15]);
  }
  auto state = std::make_shared<internal::TrackerState>(client.connection_, request, opened.revision(),
                                                        std::move(delta_prefix));
  // An Open of the same session that ran meanwhile wins: this one shares its state.
  return std::unique_ptr<TrackedSession>(new TrackedSession(client.connection_->AddTracker(std::move(state))));
}

const std::string& TrackedSession::session_id() const { return state_->session_id(); }
int64_t TrackedSession::revision() const { return state_->revision(); }
std::string TrackedSession::pending_delta_id() const { return state_->pending_delta_id(); }
bool TrackedSession::lost() const { return state_->lost(); }
size_t TrackedSession::held_count() const { return state_->held_count(); }
void TrackedSession::set_max_held(size_t max_held) { state_->set_max_held(max_held); }

Status TrackedSession::Apply(const std::vector<v1::DeltaOp>& ops, v1::ApplyDeltasResponse* response,
                             std::string delta_id) {
  v1::ApplyDeltasRequest request;
  for (const auto& op : ops) *request.add_ops() = op;
  request.set_delta_id(std::move(delta_id));
  return state_->Apply(std::move(request), response);
}

void TrackedSession::on_pending(std::function<void(const ResumedSession&)> callback) {
  state_->SetOnPending(std::move(callback));
}

Status TrackedSession::ReplaceState(v1::ReplaceStateRequest request, v1::ReplaceStateResponse* response) {
  return state_->ReplaceState(std::move(request), response);
}

}  // namespace game_sidecar
