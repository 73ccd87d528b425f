// Tracked sessions: game_sidecar::TrackedSession behind the C ABI. Each
// session's open and writes run on its lane (capi_lanes.h), so one session's
// batches go on top of each other in order and never wait for another's; what
// a restart settles (TrackedSession::on_pending, found on the supervisor's
// thread) reaches the game as a WRITE_SETTLED event through the drain.
#include <utility>

#include "capi_internal.h"

namespace v1 = sidecar::v1;
namespace gs_ns = game_sidecar;

using game_sidecar_c::Answer;
using game_sidecar_c::LocalError;
using game_sidecar_c::PendingEvent;

namespace {

const char* SettledName(gs_ns::ResumedSession::Pending pending) {
  switch (pending) {
    case gs_ns::ResumedSession::Pending::kNone: return "none";
    case gs_ns::ResumedSession::Pending::kReplayed: return "replayed";
    case gs_ns::ResumedSession::Pending::kAppliedNow: return "applied_now";
    case gs_ns::ResumedSession::Pending::kNotApplied: return "not_applied";
  }
  return "none";
}

std::string Quoted(const std::string& s) { return "\"" + game_sidecar_c::JsonEscape(s) + "\""; }

std::string SettledJson(const gs_ns::ResumedSession& r) {
  std::string held;
  for (const gs_ns::ResumedSession::Held& h : r.held) {
    if (!held.empty()) held += ",";
    held += "{\"deltaId\":" + Quoted(h.delta_id) + ",\"outcome\":\"" + SettledName(h.outcome) +
            "\",\"revision\":" + std::to_string(h.revision) + ",\"reason\":" + Quoted(h.status.reason) +
            ",\"message\":" + Quoted(h.status.message) + "}";
  }
  return "{\"sessionId\":" + Quoted(r.session_id) + ",\"resumed\":" + (r.resumed ? "true" : "false") +
         ",\"revision\":" + std::to_string(r.revision) + ",\"pending\":\"" + SettledName(r.pending) +
         "\",\"pendingDeltaId\":" + Quoted(r.pending_delta_id) + ",\"pendingReason\":" +
         Quoted(r.pending_status.reason) + ",\"pendingMessage\":" + Quoted(r.pending_status.message) +
         ",\"held\":[" + held + "]}";
}

std::shared_ptr<gs_ns::TrackedSession> Find(game_sidecar_host* gs, const std::string& session_id) {
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  auto it = gs->tracked.find(session_id);
  return it == gs->tracked.end() ? nullptr : it->second.session;
}

PendingEvent CallDone(uint64_t handle, game_sidecar_callback callback, void* user_data) {
  PendingEvent event;
  event.kind = GAME_SIDECAR_EVENT_CALL_DONE;
  event.handle = handle;
  event.callback = callback;
  event.user_data = user_data;
  return event;
}

// A request for one session: the JSON (absent: an empty message, when allowed) parsed
// into `request`, whose sessionId, if any, must be `id`. "" or what is wrong.
template <class Request>
std::string ParseFor(const std::string& id, const char* json, Request* request) {
  std::string error;
  if (id.empty()) return "session_id is empty";
  if (json != nullptr && *json != '\0' && !game_sidecar_c::FromJson(json, request, &error)) return "request_json: " + error;
  if (!request->session_id().empty() && request->session_id() != id) {
    return "request_json names session \"" + request->session_id() + "\", not \"" + id + "\"";
  }
  request->set_session_id(id);
  return "";
}

// On the session's lane: `call` with its tracked session, or why there is none.
template <class Call>
std::unique_ptr<game_sidecar_result> WithTracked(game_sidecar_host* gs, const std::string& id, Call call) {
  std::shared_ptr<gs_ns::TrackedSession> session = Find(gs, id);
  if (!session) {
    return LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "session \"" + id + "\" is not tracked: game_sidecar_track_async first");
  }
  return call(*session);
}

// On the session's lane: open (or find) the tracked session; the result for `event`.
std::unique_ptr<game_sidecar_result> Track(game_sidecar_host* gs, const v1::OpenSessionRequest& request,
                                           game_sidecar_callback on_settled, void* settled_user_data) {
  std::shared_ptr<gs_ns::SidecarClient> client = gs->Client();
  if (!client) return LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "no sidecar: launch or connect first");
  gs_ns::Status status;
  std::shared_ptr<gs_ns::TrackedSession> session(gs_ns::TrackedSession::Open(*client, request, &status).release());
  if (!session) return game_sidecar_c::FromStatus(status);
  const std::string session_id = request.session_id();
  session->on_pending([gs, session_id, on_settled, settled_user_data](const gs_ns::ResumedSession& resumed) {
    if (on_settled == nullptr) return;
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_WRITE_SETTLED;
    event.callback = on_settled;
    event.user_data = settled_user_data;
    event.event_json = SettledJson(resumed);
    gs->Post(std::move(event));
  });
  {
    std::lock_guard<std::mutex> lock(gs->sidecar_mu);
    gs->tracked[session_id].session = session;
  }
  auto result = std::make_unique<game_sidecar_result>();
  result->revision = session->revision();
  result->json = "{\"sessionId\":" + Quoted(session_id) + ",\"revision\":\"" + std::to_string(session->revision()) + "\"}";
  return result;
}

}  // namespace

extern "C" {

uint64_t game_sidecar_track_async(game_sidecar_host* gs, const char* session_id, const char* request_json,
                                  game_sidecar_callback on_settled, void* settled_user_data,
                                  game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  const std::string id = session_id ? session_id : "";
  v1::OpenSessionRequest request;
  const std::string error = ParseFor(id, request_json, &request);
  gs->SubmitForSession(id, [gs, handle, callback, user_data, request, error, on_settled, settled_user_data] {
    PendingEvent event = CallDone(handle, callback, user_data);
    event.result = error.empty() ? Track(gs, request, on_settled, settled_user_data)
                                 : LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error);
    gs->Post(std::move(event));
  });
  return handle;
}

uint64_t game_sidecar_tracked_apply_async(game_sidecar_host* gs, const char* session_id, const char* delta_id,
                                          const game_sidecar_batch* batch, game_sidecar_callback callback,
                                          void* user_data) {
  uint64_t handle = gs->NextHandle();
  const std::string id = session_id ? session_id : "";
  const std::string delta = delta_id ? delta_id : "";
  std::vector<v1::DeltaOp> ops;
  if (batch != nullptr) ops = batch->ops;  // copied: the game may free or reuse the batch at once
  const bool ok = !id.empty() && batch != nullptr;
  gs->SubmitForSession(id, [gs, handle, callback, user_data, id, delta, ops, ok] {
    PendingEvent event = CallDone(handle, callback, user_data);
    event.result = !ok ? LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", "session_id is empty or batch is NULL")
                       : WithTracked(gs, id, [&](gs_ns::TrackedSession& session) {
                           v1::ApplyDeltasResponse response;
                           return Answer(session.Apply(ops, &response, delta), response);
                         });
    gs->Post(std::move(event));
  });
  return handle;
}

uint64_t game_sidecar_tracked_replace_state_async(game_sidecar_host* gs, const char* session_id,
                                                  const char* request_json, game_sidecar_callback callback,
                                                  void* user_data) {
  uint64_t handle = gs->NextHandle();
  const std::string id = session_id ? session_id : "";
  v1::ReplaceStateRequest request;
  const std::string error = ParseFor(id, request_json, &request);
  gs->SubmitForSession(id, [gs, handle, callback, user_data, id, request, error] {
    PendingEvent event = CallDone(handle, callback, user_data);
    event.result = !error.empty() ? LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error)
                                  : WithTracked(gs, id, [&](gs_ns::TrackedSession& session) {
                                      v1::ReplaceStateResponse response;
                                      return Answer(session.ReplaceState(request, &response), response);
                                    });
    gs->Post(std::move(event));
  });
  return handle;
}

int game_sidecar_untrack(game_sidecar_host* gs, const char* session_id) {
  std::shared_ptr<gs_ns::TrackedSession> dropped;
  {
    std::lock_guard<std::mutex> lock(gs->sidecar_mu);
    auto it = gs->tracked.find(session_id ? session_id : "");
    if (it == gs->tracked.end()) return GAME_SIDECAR_NOT_FOUND;
    dropped = std::move(it->second.session);
    gs->tracked.erase(it);
  }
  return GAME_SIDECAR_OK;  // `dropped` goes here, outside the lock (or with the lane's last use of it)
}

int64_t game_sidecar_tracked_revision(game_sidecar_host* gs, const char* session_id) {
  std::shared_ptr<gs_ns::TrackedSession> session = Find(gs, session_id ? session_id : "");
  return session ? session->revision() : -1;
}

size_t game_sidecar_tracked_held_count(game_sidecar_host* gs, const char* session_id) {
  std::shared_ptr<gs_ns::TrackedSession> session = Find(gs, session_id ? session_id : "");
  return session ? session->held_count() : 0;
}

}  // extern "C"
