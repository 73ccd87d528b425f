// The C ABI's private side: the result and object behind the opaque handles of
// game_sidecar_c.h, and the helpers its translation units share.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capi_lanes.h"
#include "game_sidecar/call_queue.h"
#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/tracked_session.h"
#include "game_sidecar_c.h"

struct game_sidecar_result {
  int code = 0;
  std::string reason;
  std::string message;
  std::string metadata_json = "{}";
  std::string json;
  std::string stderr_tail;
  int64_t revision = -1;
};

struct game_sidecar_batch {
  std::vector<sidecar::v1::DeltaOp> ops;
};

namespace game_sidecar_c {

// One queued event, owning everything the C view (game_sidecar_event) points into.
struct PendingEvent {
  int kind = 0;
  uint64_t handle = 0;
  game_sidecar_callback callback = nullptr;
  void* user_data = nullptr;
  std::unique_ptr<game_sidecar_result> result;
  int run_kind = 0;
  std::string run_id;
  uint64_t seq = 0;
  std::string text;
  bool sentence_end = false;
  std::vector<std::string> mention_ids;
  std::vector<game_sidecar_mention> mentions;  // entity_id filled at delivery
  std::string action_id;
  std::string event_json;
  bool final_run_event = false;  // the run's record is released after delivery
  int status = 0;                // STATUS, EXIT
};

struct TrackedRecord {
  std::shared_ptr<game_sidecar::TrackedSession> session;
};

struct RunRecord {
  std::unique_ptr<game_sidecar::RunHandle> handle;  // null until the worker started it
  std::string run_id;
  bool cancel_requested = false;
};

std::unique_ptr<game_sidecar_result> FromStatus(const game_sidecar::Status& status);
std::unique_ptr<game_sidecar_result> LocalError(int code, std::string reason, std::string message);
std::string JsonEscape(const std::string& s);
// A message as proto3 JSON (lowerCamel names, default values printed).
std::string ToJson(const google::protobuf::Message& message);
// Parses proto3 JSON into `message`; "" is an empty message. False + `error` on bad input.
bool FromJson(const char* json, google::protobuf::Message* message, std::string* error);
// A unary method's request, parsed from its JSON ("" is an empty message); null
// with *error for an unknown method or bad JSON (refused: INVALID_REQUEST, nothing sent).
std::unique_ptr<google::protobuf::Message> ParseUnary(const std::string& method, const std::string& request_json,
                                                      std::string* error);
// Runs a unary method on `client` with the request ParseUnary made for it.
std::unique_ptr<game_sidecar_result> InvokeUnary(game_sidecar::SidecarClient& client, const std::string& method,
                                                 const google::protobuf::Message& request);
// A call's outcome as a result: its status, and on success the response as JSON
// and its `revision` (when it has one).
std::unique_ptr<game_sidecar_result> Answer(const game_sidecar::Status& status, const google::protobuf::Message& response);
std::unique_ptr<game_sidecar_result> InvokeApply(game_sidecar::SidecarClient& client,
                                                 const sidecar::v1::ApplyDeltasRequest& request);
PendingEvent FromRunUpdate(const game_sidecar::RunUpdate& update);
// The session a parsed unary request is for ("" when it names none, or there is
// no request: it fails before any call). False when the session is named only
// inside the body (an ImportSession whose session_id is empty takes its blob's):
// such a call cannot be put on a lane.
bool RequestSession(const google::protobuf::Message* request, std::string* session);

}  // namespace game_sidecar_c

// The object behind game_sidecar_host*: a sidecar, its client, a
// game_sidecar::CallQueue that is both the object's worker and the one queue of
// events the game thread drains (call results, run events, log lines, lifecycle
// events, in the order they came), and the per-session lanes.
//
// The worker takes every *_async call in submission order. It runs a launch and
// a stop itself, after the lanes have finished what was submitted before them
// (WaitIdle); a session's call or run start it hands to that session's lane at
// once, so it never waits for the call to be answered. Order therefore holds
// within a session and around a launch or stop, and a stuck call holds up only
// its own session.
struct game_sidecar_host {
  game_sidecar_host();
  ~game_sidecar_host();

  uint64_t NextHandle() { return next_handle.fetch_add(1); }
  // Queues an event for the next drain (from any thread).
  void Post(game_sidecar_c::PendingEvent event);
  // Queues a STATUS or EXIT event for the lifecycle callback (dropped when none is set).
  void PostLifecycle(game_sidecar_c::PendingEvent event);
  // Runs `task` on the worker after everything submitted before it.
  void Submit(std::function<void()> task);
  // Runs `task` on the worker once the lanes have run everything handed to them
  // before (a launch, a stop, a call whose session is unknown).
  void SubmitBarrier(std::function<void()> task);
  // Runs `task` on `session`'s lane, after what was submitted before it to the
  // worker (a launch) and to that lane.
  void SubmitForSession(std::string session, std::function<void()> task);
  // Hands one event to its callback (inside game_sidecar_drain).
  void Deliver(game_sidecar_c::PendingEvent& event);
  std::shared_ptr<game_sidecar::SidecarClient> Client();
  // Blocking bodies shared by the blocking and *_async forms.
  std::unique_ptr<game_sidecar_result> DoLaunch(const game_sidecar::SidecarOptions& options,
                                                game_sidecar::ClientOptions client_options);
  std::unique_ptr<game_sidecar_result> DoStop();
  void StartRunOnWorker(uint64_t handle, sidecar::v1::RunRequest request, game_sidecar_callback callback,
                        void* user_data);

  // First member: constructed first, destroyed last, so whatever posts into
  // it (runs, the process's supervisor and log reader) has ended before it goes.
  game_sidecar::CallQueue calls;

  std::atomic<uint64_t> next_handle{1};

  // After `calls`: destroyed first, but the destructor closes both explicitly.
  game_sidecar_c::Lanes lanes;

  // The sidecar. The client is shared so a blocking call on another thread
  // keeps it alive across a concurrent stop.
  mutable std::mutex sidecar_mu;
  std::unique_ptr<game_sidecar::SidecarProcess> process;
  std::shared_ptr<game_sidecar::SidecarClient> client;
  std::map<uint64_t, game_sidecar_c::RunRecord> runs;
  // Tracked sessions of the current client, by session ID (capi_tracked.cpp).
  std::map<std::string, game_sidecar_c::TrackedRecord> tracked;

  // The lifecycle callback (STATUS, EXIT); its own lock, as the supervisor thread reads it.
  std::mutex lifecycle_mu;
  game_sidecar_callback lifecycle_callback = nullptr;
  void* lifecycle_user_data = nullptr;
};
