// TrackedSession and its TrackerState: revision tracking, the unacknowledged
// batch, and the re-open after a restart.
#include "game_sidecar/tracked_session.h"

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

}  // namespace

TrackerState::TrackerState(std::shared_ptr<Connection> connection, v1::OpenSessionRequest open, int64_t revision,
                           std::string prefix)
    : connection_(std::move(connection)), open_(std::move(open)), prefix_(std::move(prefix)), revision_(revision) {}

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

void TrackerState::Acknowledge(int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  revision_ = revision;
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
  if (st.reason == "STALE_REVISION") {
    auto it = st.metadata.find("current_revision");
    if (it != st.metadata.end()) revision_ = std::strtoll(it->second.c_str(), nullptr, 10);
  }
  return ResumedSession::Pending::kNotApplied;
}

Status TrackerState::Apply(v1::ApplyDeltasRequest request, v1::ApplyDeltasResponse* response) {
  std::lock_guard<std::mutex> call(call_mu_);
  Status gone;
  if (connection_->IsGone(&gone)) return gone;  // fail at once, send nothing
  if (lost()) {
    return Status::Local(StatusCode::kFailedPrecondition, "",
                         "session " + open_.session_id() +
                             " was lost in a sidecar restart; resync it with ReplaceState first");
  }
  Status resend;
  std::string pending_id = pending_delta_id();
  if (!pending_id.empty() && ResendPending(&resend) == ResumedSession::Pending::kNotApplied) {
    if (Unanswered(resend)) return resend;
    Status s = resend;
    s.message = "the unacknowledged batch " + pending_id + " was not applied (" + resend.message +
                "); this batch was not sent";
    return s;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (request.delta_id().empty()) request.set_delta_id(prefix_ + "-" + std::to_string(next_id_++));
    request.set_session_id(open_.session_id());
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
    pending_ = std::move(request);
  } else if (st.reason == "STALE_REVISION") {
    auto it = st.metadata.find("current_revision");
    if (it != st.metadata.end()) revision_ = std::strtoll(it->second.c_str(), nullptr, 10);
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
    Acknowledge(response->revision());
    std::lock_guard<std::mutex> lock(mu_);
    lost_ = false;
  }
  return st;
}

ResumedSession TrackerState::Resume() {
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
  out.revision = revision();
  return out;
}

}  // namespace internal

TrackedSession::TrackedSession(std::shared_ptr<internal::TrackerState> state) : state_(std::move(state)) {}

TrackedSession::~TrackedSession() = default;

std::unique_ptr<TrackedSession> TrackedSession::Open(SidecarClient& client, const v1::OpenSessionRequest& request,
                                                     Status* status, std::string delta_prefix) {
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
  client.connection_->AddTracker(state);
  return std::unique_ptr<TrackedSession>(new TrackedSession(std::move(state)));
}

const std::string& TrackedSession::session_id() const { return state_->session_id(); }
int64_t TrackedSession::revision() const { return state_->revision(); }
std::string TrackedSession::pending_delta_id() const { return state_->pending_delta_id(); }
bool TrackedSession::lost() const { return state_->lost(); }

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
