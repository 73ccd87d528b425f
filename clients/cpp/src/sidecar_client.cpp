// SidecarClient: a facade over the shared Connection; unary RPCs, streams, runs.
#include "game_sidecar/sidecar_client.h"


#include "connection.h"
#include "run_id.h"
#include "delta_call.h"
#include "run_call.h"
#include "world_upload.h"

namespace game_sidecar {
namespace {

using internal::Connection;

}  // namespace

SidecarClient::SidecarClient(const std::string& target, std::string token, ClientOptions options)
    : connection_(std::make_shared<Connection>(target, std::move(token), options)) {}

SidecarClient::SidecarClient(const SidecarProcess& process, ClientOptions options)
    : SidecarClient(process.target(), process.token(), options) {
  process.Attach(connection_);
}

SidecarClient::~SidecarClient() = default;
SidecarClient::SidecarClient(SidecarClient&&) noexcept = default;
SidecarClient& SidecarClient::operator=(SidecarClient&&) noexcept = default;

std::string SidecarClient::endpoint() const { return connection_->endpoint(); }

bool SidecarClient::WaitForConnected(std::chrono::milliseconds timeout) {
  std::shared_ptr<internal::Link> link = connection_->link();
  return link && link->channel->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

Status SidecarClient::GetInfo(const v1::GetInfoRequest& request, v1::GetInfoResponse* response) {
  return connection_->Unary(&internal::Link::sidecar, &v1::SidecarService::Stub::GetInfo, request, response);
}

Status SidecarClient::Shutdown(const std::string& reason) {
  v1::ShutdownRequest request;
  request.set_reason(reason);
  v1::ShutdownResponse response;
  Status st = connection_->Unary(&internal::Link::sidecar, &v1::SidecarService::Stub::Shutdown, request, &response);
  if (st.ok()) connection_->NoteShutdownRequested();  // its exit is then one the game asked for
  return st;
}

Status SidecarClient::OpenSession(const v1::OpenSessionRequest& request, v1::OpenSessionResponse* response) {
  return connection_->Unary(&internal::Link::sessions, &v1::SessionService::Stub::OpenSession, request, response);
}

Status SidecarClient::CloseSession(const std::string& session_id, v1::CloseSessionResponse* response) {
  v1::CloseSessionRequest request;
  request.set_session_id(session_id);
  return connection_->Unary(&internal::Link::sessions, &v1::SessionService::Stub::CloseSession, request, response);
}

Status SidecarClient::ApplyDeltas(const v1::ApplyDeltasRequest& request, v1::ApplyDeltasResponse* response) {
  return connection_->Unary(&internal::Link::sessions, &v1::SessionService::Stub::ApplyDeltas, request, response);
}

Status SidecarClient::ReplaceState(const v1::ReplaceStateRequest& request, v1::ReplaceStateResponse* response) {
  return internal::ReplaceWorld(*connection_, request, response);
}

Status SidecarClient::GetState(const v1::GetStateRequest& request, v1::GetStateResponse* response) {
  return connection_->Unary(&internal::Link::sessions, &v1::SessionService::Stub::GetState, request, response);
}

Status SidecarClient::ExportSession(const std::string& session_id, v1::ExportSessionResponse* response) {
  v1::ExportSessionRequest request;
  request.set_session_id(session_id);
  return connection_->Unary(&internal::Link::sessions, &v1::SessionService::Stub::ExportSession, request, response);
}

Status SidecarClient::ImportSession(const v1::ImportSessionRequest& request, v1::ImportSessionResponse* response) {
  return internal::ImportWorld(*connection_, request, response);
}

std::unique_ptr<DeltaStream> SidecarClient::StreamDeltas() {
  return std::unique_ptr<DeltaStream>(new DeltaStream(std::make_unique<internal::DeltaCall>(connection_)));
}

std::unique_ptr<RunHandle> SidecarClient::StartRun(v1::RunRequest request, RunCallback callback) {
  if (request.run_id().empty()) request.set_run_id(internal::NewRunId());
  std::string run_id = request.run_id();
  auto call = internal::RunCall::Start(connection_, std::move(request), std::move(callback));
  return std::unique_ptr<RunHandle>(new RunHandle(std::move(call), std::move(run_id)));
}

Status SidecarClient::Run(v1::RunRequest request, RunCallback callback) {
  return StartRun(std::move(request), std::move(callback))->Wait();
}

Status SidecarClient::CancelRun(const std::string& run_id) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  v1::CancelRunResponse response;
  return connection_->Unary(&internal::Link::agent, &v1::AgentService::Stub::CancelRun, request, &response);
}

Status SidecarClient::PreviewPrompt(const v1::PreviewPromptRequest& request, v1::PreviewPromptResponse* response) {
  return connection_->Unary(&internal::Link::agent, &v1::AgentService::Stub::PreviewPrompt, request, response);
}

Status SidecarClient::ReadTranscript(const v1::ReadTranscriptRequest& request,
                                     v1::ReadTranscriptResponse* response) {
  return connection_->Unary(&internal::Link::agent, &v1::AgentService::Stub::ReadTranscript, request, response);
}

namespace internal {

Status ReplaceWorld(Connection& connection, const v1::ReplaceStateRequest& request,
                    v1::ReplaceStateResponse* response) {
  if (request.ByteSizeLong() <= SidecarClient::kChunkBytes) {
    return connection.Unary(&Link::sessions, &v1::SessionService::Stub::ReplaceState, request, response);
  }
  // Over the server's per-message limit a world goes in pieces (ReplaceStateChunked).
  v1::ReplaceStateChunkedResponse chunked;
  Status st = connection.Upload(&Link::sessions, &v1::SessionService::Stub::ReplaceStateChunked,
                                request.SerializeAsString(), SidecarClient::kChunkBytes, &chunked);
  if (st.ok() && response != nullptr) response->set_revision(chunked.revision());
  return st;
}

Status ImportWorld(Connection& connection, const v1::ImportSessionRequest& request,
                   v1::ImportSessionResponse* response) {
  if (request.ByteSizeLong() <= SidecarClient::kChunkBytes) {
    return connection.Unary(&Link::sessions, &v1::SessionService::Stub::ImportSession, request, response);
  }
  v1::ImportSessionChunkedResponse chunked;
  Status st = connection.Upload(&Link::sessions, &v1::SessionService::Stub::ImportSessionChunked,
                                request.SerializeAsString(), SidecarClient::kChunkBytes, &chunked);
  if (st.ok() && response != nullptr) {
    response->set_session_id(chunked.session_id());
    response->set_revision(chunked.revision());
  }
  return st;
}

}  // namespace internal
}  // namespace game_sidecar
