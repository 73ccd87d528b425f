// SidecarClient: the RPCs a game needs, each with `authorization: Bearer <token>`
// attached, each reporting a Status (code + stable reason) instead of throwing.
//
// Blocking calls: call them off the game thread (a worker or task graph), or
// accept the short stall of a local call. Runs stream on their own thread; see
// run.h for handing their events to the game thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "game_sidecar/delta_stream.h"
#include "game_sidecar/run.h"
#include "game_sidecar/sidecar_process.h"
#include "game_sidecar/status.h"
#include "sidecar/v1/agent_service.grpc.pb.h"
#include "sidecar/v1/session_service.grpc.pb.h"
#include "sidecar/v1/sidecar_service.grpc.pb.h"

namespace game_sidecar {

namespace v1 = ::sidecar::v1;

struct ClientOptions {
  // Deadline of each unary call; zero = none. Runs and DeltaStreams have none
  // (cancel them instead, or set GenerationLimits.total_timeout_ms).
  std::chrono::milliseconds call_timeout{30000};
  // Largest message accepted (ExportSession blobs, GetState snapshots).
  int max_receive_bytes = 64 * 1024 * 1024;
};

class SidecarClient {
 public:
  // `target` is "unix:/path/to/sock" or "127.0.0.1:port" (see GrpcTarget).
  SidecarClient(const std::string& target, std::string token, ClientOptions options = {});
  // Connects to a launched sidecar with its handshake address and token.
  explicit SidecarClient(const SidecarProcess& process, ClientOptions options = {});

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
  Status ReplaceState(const v1::ReplaceStateRequest& request, v1::ReplaceStateResponse* response);
  Status GetState(const v1::GetStateRequest& request, v1::GetStateResponse* response);
  Status ExportSession(const std::string& session_id, v1::ExportSessionResponse* response);
  Status ImportSession(const v1::ImportSessionRequest& request, v1::ImportSessionResponse* response);
  // Opens a StreamDeltas stream (nullptr never; a broken stream reports at Write/Finish).
  std::unique_ptr<DeltaStream> StreamDeltas();

  // AgentService
  // Starts a run; `callback` gets every event on the run's reader thread. When
  // request.run_id is empty the client makes one up, so CancelRun works before
  // `started` arrives.
  std::unique_ptr<RunHandle> StartRun(v1::RunRequest request, RunCallback callback);
  // StartRun + Wait: blocks until the run ends and returns its final status.
  Status Run(v1::RunRequest request, RunCallback callback);
  Status CancelRun(const std::string& run_id);
  Status PreviewPrompt(const v1::PreviewPromptRequest& request, v1::PreviewPromptResponse* response);
  Status ReadTranscript(const v1::ReadTranscriptRequest& request, v1::ReadTranscriptResponse* response);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  friend class RunHandle;
  // Adds the token and, for unary calls, the deadline.
  void Prepare(grpc::ClientContext* context, bool unary) const;
  template <class Stub, class Req, class Resp>
  Status Unary(Stub* stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
               const Req& request, Resp* response);

  std::string token_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SidecarService::Stub> sidecar_;
  std::unique_ptr<v1::SessionService::Stub> sessions_;
  std::unique_ptr<v1::AgentService::Stub> agent_;
};

}  // namespace game_sidecar
