// SidecarClient: the RPCs a game needs, each with `authorization: Bearer <token>`
// attached, each reporting a Status (code + stable reason) instead of throwing.
//
// Each unary call comes in two forms. The blocking one (GetInfo) waits for the
// answer: for tools, tests and worker threads. The non-blocking one
// (GetInfoAsync) returns at once; the call runs on a CallQueue's worker, in
// the order submitted to that queue, and its outcome reaches `done` only
// inside that queue's Drain(), on the game thread (call_queue.h). Runs stream
// on gRPC's callback threads; see run.h for handing their events to the game thread.
//
// No gRPC type appears here: the channel and stubs live behind a shared
// connection that the client, its runs and its delta streams co-own.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "game_sidecar/call_queue.h"
#include "game_sidecar/delta_stream.h"
#include "game_sidecar/run.h"
#include "game_sidecar/sidecar_process.h"
#include "game_sidecar/status.h"
#include "game_sidecar/v1/agent_service.pb.h"
#include "game_sidecar/v1/session_service.pb.h"
#include "game_sidecar/v1/sidecar_service.pb.h"

namespace game_sidecar {

namespace v1 = ::sidecar::v1;
namespace internal {
class Connection;
}

struct ClientOptions {
  // Deadline of each unary call; zero = none. Short, so no call waits on a
  // hung sidecar longer than the hang bound even without a SidecarProcess
  // watching it. Runs and DeltaStreams have none (cancel them instead, or set
  // GenerationLimits.total_timeout_ms); a supervised client ends them when the
  // process exits or is declared hung.
  std::chrono::milliseconds call_timeout{5000};
  // gRPC keepalive: a ping after this long without traffic, and the
  // connection is dropped when its answer takes longer than this again. Zero
  // turns keepalive off. The sidecar's server permits pings every 1 s.
  std::chrono::milliseconds keepalive{1000};
  // Largest message accepted (ExportSession blobs, GetState snapshots).
  int max_receive_bytes = 64 * 1024 * 1024;
};

// The callbacks of the non-blocking forms: the call's status and, when it is
// ok, its response (a default one otherwise). Run inside CallQueue::Drain.
template <class Response>
using ResponseCallback = std::function<void(Status status, Response response)>;
using StatusCallback = std::function<void(Status status)>;

// Safe to use from several threads at once. Copying is not allowed; moving is
// (a moved-from client may only be destroyed or assigned to).
class TrackedSession;

class SidecarClient {
 public:
  // `target` is "unix:/path/to/sock" or "127.0.0.1:port" (see GrpcTarget).
  SidecarClient(const std::string& target, std::string token, ClientOptions options = {});
  // Connects to a launched sidecar with its handshake address and token, and
  // lets the process supervise the connection: when it exits (or is declared
  // hung) every call in flight ends and every new call fails at once with
  // reason "SIDECAR_GONE" (Status::sidecar_exit says how it ended); after a
  // restart (SidecarOptions::restart) the client talks to the new process.
  // The client may outlive the process (its calls then fail with SIDECAR_GONE).
  explicit SidecarClient(const SidecarProcess& process, ClientOptions options = {});
  ~SidecarClient();
  SidecarClient(SidecarClient&&) noexcept;
  SidecarClient& operator=(SidecarClient&&) noexcept;
  SidecarClient(const SidecarClient&) = delete;
  SidecarClient& operator=(const SidecarClient&) = delete;

  // The endpoint calls go to ("unix:/..." or "127.0.0.1:PORT"), the new one after a restart.
  std::string endpoint() const;

  // Waits until the channel is connected (the sidecar is bound before it
  // prints its handshake, so this is quick after Launch).
  bool WaitForConnected(std::chrono::milliseconds timeout);

  // SidecarService
  Status GetInfo(const v1::GetInfoRequest& request, v1::GetInfoResponse* response);
  Status Shutdown(const std::string& reason);

  // SessionService
  Status OpenSession(const v1::OpenSessionRequest& request, v1::OpenSessionResponse* response);
  Status CloseSession(const std::string& session_id, v1::CloseSessionResponse* response = nullptr);
  Status ApplyDeltas(const v1::ApplyDeltasRequest& request, v1::ApplyDeltasResponse* response);
  // A request over kChunkBytes goes in pieces (ReplaceStateChunked): the server
  // refuses any one message over its max_request_bytes (RESOURCE_EXHAUSTED), so
  // a whole world fits however big, up to its max_snapshot_bytes.
  Status ReplaceState(const v1::ReplaceStateRequest& request, v1::ReplaceStateResponse* response);
  Status GetState(const v1::GetStateRequest& request, v1::GetStateResponse* response);
  Status ExportSession(const std::string& session_id, v1::ExportSessionResponse* response);
  // Like ReplaceState: a save over kChunkBytes goes in pieces (ImportSessionChunked).
  Status ImportSession(const v1::ImportSessionRequest& request, v1::ImportSessionResponse* response);
  // The piece size of a chunked world, and the size above which one is chunked
  // (the server's max_request_bytes is at least 1 MiB; sidecar.client's CHUNK_BYTES).
  static constexpr size_t kChunkBytes = 512 * 1024;
  // Opens a StreamDeltas stream (nullptr never; a broken stream reports at Write/Finish).
  std::unique_ptr<DeltaStream> StreamDeltas();

  // AgentService
  // Starts a run; `callback` gets every event on a gRPC callback thread (see
  // RunCallback). When request.run_id is empty the client makes one up, so
  // CancelRun works before `started` arrives. Never blocks: no thread is
  // created per run.
  std::unique_ptr<RunHandle> StartRun(v1::RunRequest request, RunCallback callback);
  // StartRun + Wait: blocks until the run ends and returns its final status.
  Status Run(v1::RunRequest request, RunCallback callback);
  Status CancelRun(const std::string& run_id);
  Status PreviewPrompt(const v1::PreviewPromptRequest& request, v1::PreviewPromptResponse* response);
  Status ReadTranscript(const v1::ReadTranscriptRequest& request, v1::ReadTranscriptResponse* response);

  // The non-blocking forms of every unary call above (see call_queue.h). Each
  // returns at once; the call runs on `queue`'s worker after every call
  // submitted to `queue` before it (two ApplyDeltasAsync are applied in the
  // order submitted), and `done` gets its outcome inside a later
  // queue.Drain(), on the draining thread, never earlier and never elsewhere.
  // The call holds the client's connection, so the client may be destroyed
  // first; a supervised client's call ends with SIDECAR_GONE when the process
  // exits or is declared hung, like the blocking form. `done` may be empty.
  CallHandle GetInfoAsync(CallQueue& queue, v1::GetInfoRequest request, ResponseCallback<v1::GetInfoResponse> done);
  CallHandle ShutdownAsync(CallQueue& queue, std::string reason, StatusCallback done);
  CallHandle OpenSessionAsync(CallQueue& queue, v1::OpenSessionRequest request,
                              ResponseCallback<v1::OpenSessionResponse> done);
  CallHandle CloseSessionAsync(CallQueue& queue, std::string session_id, ResponseCallback<v1::CloseSessionResponse> done);
  CallHandle ApplyDeltasAsync(CallQueue& queue, v1::ApplyDeltasRequest request,
                              ResponseCallback<v1::ApplyDeltasResponse> done);
  // Chunked above kChunkBytes, like ReplaceState.
  CallHandle ReplaceStateAsync(CallQueue& queue, v1::ReplaceStateRequest request,
                               ResponseCallback<v1::ReplaceStateResponse> done);
  CallHandle GetStateAsync(CallQueue& queue, v1::GetStateRequest request, ResponseCallback<v1::GetStateResponse> done);
  CallHandle ExportSessionAsync(CallQueue& queue, std::string session_id,
                                ResponseCallback<v1::ExportSessionResponse> done);
  // Chunked above kChunkBytes, like ImportSession.
  CallHandle ImportSessionAsync(CallQueue& queue, v1::ImportSessionRequest request,
                                ResponseCallback<v1::ImportSessionResponse> done);
  CallHandle CancelRunAsync(CallQueue& queue, std::string run_id, StatusCallback done);
  CallHandle PreviewPromptAsync(CallQueue& queue, v1::PreviewPromptRequest request,
                                ResponseCallback<v1::PreviewPromptResponse> done);
  CallHandle ReadTranscriptAsync(CallQueue& queue, v1::ReadTranscriptRequest request,
                                 ResponseCallback<v1::ReadTranscriptResponse> done);

 private:
  friend class TrackedSession;
  friend class RunHandle;
  // A client on an existing connection: what a queued call runs with.
  explicit SidecarClient(std::shared_ptr<internal::Connection> connection);
  // Runs `call(client, &response)` on `queue`'s worker with a client on this connection.
  template <class Response, class Call>
  CallHandle Async(CallQueue& queue, Call call, ResponseCallback<Response> done);
  std::shared_ptr<internal::Connection> connection_;
};

}  // namespace game_sidecar
