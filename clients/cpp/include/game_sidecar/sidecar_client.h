// SidecarClient: the RPCs a game needs, each with `authorization: Bearer <token>`
// attached, each reporting a Status (code + stable reason) instead of throwing.
//
// Blocking calls: call them off the game thread (a worker or task graph), or
// accept the short stall of a local call. Runs stream on gRPC's callback
// threads; see run.h for handing their events to the game thread.
//
// No gRPC type appears here: the channel and stubs live behind a shared
// connection that the client, its runs and its delta streams co-own.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

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
  // (the server's max_request_bytes is at least 1 MiB; sidecar/client.py's CHUNK_BYTES).
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

 private:
  friend class TrackedSession;
  std::shared_ptr<internal::Connection> connection_;
};

}  // namespace game_sidecar
