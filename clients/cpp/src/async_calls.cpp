// The non-blocking forms: each runs its blocking twin on a CallQueue's worker
// and hands the outcome to the caller's callback through the queue's Drain.
// What a call holds (a client on the shared connection, a tracked session's
// state, a process) lives in its work and is released on the worker.
#include <utility>

#include "connection.h"
#include "game_sidecar/call_queue.h"
#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/tracked_session.h"
#include "run_call.h"
#include "tracker_state.h"

namespace game_sidecar {
namespace {

// The result of a call with a response, as the queue carries it.
template <class Response>
struct Answer {
  Status status;
  Response response;
};

template <class Response>
auto Deliver(ResponseCallback<Response> done) {
  return [done = std::move(done)](Answer<Response> answer) {
    if (done) done(std::move(answer.status), std::move(answer.response));
  };
}

StatusCallback OrNothing(StatusCallback done) {
  if (done) return done;
  return [](Status) {};
}

}  // namespace

SidecarClient::SidecarClient(std::shared_ptr<internal::Connection> connection) : connection_(std::move(connection)) {}

template <class Response, class Call>
CallHandle SidecarClient::Async(CallQueue& queue, Call call, ResponseCallback<Response> done) {
  return queue.Submit(
      [client = SidecarClient(connection_), call = std::move(call)]() mutable {
        Answer<Response> answer;
        answer.status = call(client, &answer.response);
        return answer;
      },
      Deliver<Response>(std::move(done)));
}

CallHandle SidecarClient::GetInfoAsync(CallQueue& queue, v1::GetInfoRequest request,
                                       ResponseCallback<v1::GetInfoResponse> done) {
  return Async<v1::GetInfoResponse>(
      queue, [request = std::move(request)](SidecarClient& c, v1::GetInfoResponse* r) { return c.GetInfo(request, r); },
      std::move(done));
}

CallHandle SidecarClient::ShutdownAsync(CallQueue& queue, std::string reason, StatusCallback done) {
  return queue.Submit([client = SidecarClient(connection_), reason = std::move(reason)]() mutable {
    return client.Shutdown(reason);
  }, OrNothing(std::move(done)));
}

CallHandle SidecarClient::OpenSessionAsync(CallQueue& queue, v1::OpenSessionRequest request,
                                           ResponseCallback<v1::OpenSessionResponse> done) {
  return Async<v1::OpenSessionResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::OpenSessionResponse* r) { return c.OpenSession(request, r); },
      std::move(done));
}

CallHandle SidecarClient::CloseSessionAsync(CallQueue& queue, std::string session_id,
                                            ResponseCallback<v1::CloseSessionResponse> done) {
  return Async<v1::CloseSessionResponse>(
      queue,
      [id = std::move(session_id)](SidecarClient& c, v1::CloseSessionResponse* r) { return c.CloseSession(id, r); },
      std::move(done));
}

CallHandle SidecarClient::ApplyDeltasAsync(CallQueue& queue, v1::ApplyDeltasRequest request,
                                           ResponseCallback<v1::ApplyDeltasResponse> done) {
  return Async<v1::ApplyDeltasResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::ApplyDeltasResponse* r) { return c.ApplyDeltas(request, r); },
      std::move(done));
}

CallHandle SidecarClient::ReplaceStateAsync(CallQueue& queue, v1::ReplaceStateRequest request,
                                            ResponseCallback<v1::ReplaceStateResponse> done) {
  return Async<v1::ReplaceStateResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::ReplaceStateResponse* r) { return c.ReplaceState(request, r); },
      std::move(done));
}

CallHandle SidecarClient::GetStateAsync(CallQueue& queue, v1::GetStateRequest request,
                                        ResponseCallback<v1::GetStateResponse> done) {
  return Async<v1::GetStateResponse>(
      queue, [request = std::move(request)](SidecarClient& c, v1::GetStateResponse* r) { return c.GetState(request, r); },
      std::move(done));
}

CallHandle SidecarClient::ExportSessionAsync(CallQueue& queue, std::string session_id,
                                             ResponseCallback<v1::ExportSessionResponse> done) {
  return Async<v1::ExportSessionResponse>(
      queue,
      [id = std::move(session_id)](SidecarClient& c, v1::ExportSessionResponse* r) { return c.ExportSession(id, r); },
      std::move(done));
}

CallHandle SidecarClient::ImportSessionAsync(CallQueue& queue, v1::ImportSessionRequest request,
                                             ResponseCallback<v1::ImportSessionResponse> done) {
  return Async<v1::ImportSessionResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::ImportSessionResponse* r) {
        return c.ImportSession(request, r);
      },
      std::move(done));
}

CallHandle SidecarClient::CancelRunAsync(CallQueue& queue, std::string run_id, StatusCallback done) {
  return queue.Submit([client = SidecarClient(connection_), run_id = std::move(run_id)]() mutable {
    return client.CancelRun(run_id);
  }, OrNothing(std::move(done)));
}

CallHandle SidecarClient::PreviewPromptAsync(CallQueue& queue, v1::PreviewPromptRequest request,
                                             ResponseCallback<v1::PreviewPromptResponse> done) {
  return Async<v1::PreviewPromptResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::PreviewPromptResponse* r) {
        return c.PreviewPrompt(request, r);
      },
      std::move(done));
}

CallHandle SidecarClient::ReadTranscriptAsync(CallQueue& queue, v1::ReadTranscriptRequest request,
                                              ResponseCallback<v1::ReadTranscriptResponse> done) {
  return Async<v1::ReadTranscriptResponse>(
      queue,
      [request = std::move(request)](SidecarClient& c, v1::ReadTranscriptResponse* r) {
        return c.ReadTranscript(request, r);
      },
      std::move(done));
}

CallHandle RunHandle::CancelOnServerAsync(CallQueue& queue, std::function<void(Status)> done) {
  // The connection and the run ID, not the RunCall: the handle alone frees the call.
  SidecarClient client(call_->connection());
  return client.CancelRunAsync(queue, run_id_, std::move(done));
}

namespace {

struct Launched {
  std::unique_ptr<SidecarProcess> process;
  LaunchError error;
};

}  // namespace

CallHandle SidecarProcess::LaunchAsync(SidecarOptions options, CallQueue& queue,
                                       std::function<void(std::unique_ptr<SidecarProcess>, LaunchError)> done) {
  return queue.Submit(
      [options = std::move(options)]() mutable {
        Launched launched;
        launched.process = Launch(std::move(options), &launched.error);
        return launched;
      },
      [done = std::move(done)](Launched launched) {
        if (done) done(std::move(launched.process), std::move(launched.error));
      });
}

CallHandle SidecarProcess::StopAsync(std::unique_ptr<SidecarProcess> process, CallQueue& queue,
                                     std::function<void(ExitInfo)> done) {
  return queue.Submit(
      [process = std::move(process)]() mutable {
        ExitInfo exit = process ? process->Stop() : ExitInfo{};
        process.reset();  // joins nothing that waits any more: Stop has ended it
        return exit;
      },
      [done = std::move(done)](ExitInfo exit) {
        if (done) done(exit);
      });
}

namespace {

struct Opened {
  Status status;
  std::unique_ptr<TrackedSession> session;
};

}  // namespace

CallHandle TrackedSession::OpenAsync(SidecarClient& client, CallQueue& queue, v1::OpenSessionRequest request,
                                     std::function<void(Status, std::unique_ptr<TrackedSession>)> done,
                                     std::string delta_prefix) {
  return queue.Submit(
      [c = SidecarClient(client.connection_), request = std::move(request),
       prefix = std::move(delta_prefix)]() mutable {
        Opened opened;
        opened.session = Open(c, request, &opened.status, std::move(prefix));
        return opened;
      },
      [done = std::move(done)](Opened opened) {
        if (done) done(std::move(opened.status), std::move(opened.session));
      });
}

CallHandle TrackedSession::ApplyAsync(CallQueue& queue, std::vector<v1::DeltaOp> ops,
                                      ResponseCallback<v1::ApplyDeltasResponse> done, std::string delta_id) {
  v1::ApplyDeltasRequest request;
  for (auto& op : ops) *request.add_ops() = std::move(op);
  request.set_delta_id(std::move(delta_id));
  return queue.Submit(
      [state = state_, request = std::move(request)]() mutable {
        Answer<v1::ApplyDeltasResponse> answer;
        answer.status = state->Apply(std::move(request), &answer.response);
        return answer;
      },
      Deliver<v1::ApplyDeltasResponse>(std::move(done)));
}

CallHandle TrackedSession::ReplaceStateAsync(CallQueue& queue, v1::ReplaceStateRequest request,
                                             ResponseCallback<v1::ReplaceStateResponse> done) {
  return queue.Submit(
      [state = state_, request = std::move(request)]() mutable {
        Answer<v1::ReplaceStateResponse> answer;
        answer.status = state->ReplaceState(std::move(request), &answer.response);
        return answer;
      },
      Deliver<v1::ReplaceStateResponse>(std::move(done)));
}

}  // namespace game_sidecar
