// SidecarClient: channel setup, the token on every call, unary RPCs.
#include "game_sidecar/sidecar_client.h"

#include <random>

namespace game_sidecar {
namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, const ClientOptions& options) {
  grpc::ChannelArguments args;
  // The sidecar is local: an http_proxy in the game's environment must not reroute it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  // A local sidecar that restarted should be reachable again quickly.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Plaintext is safe: a 0700 Unix socket or loopback, plus the per-launch token.
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// Run IDs only need to be unique among the sidecar's runs; they are not secret.
std::string MakeRunId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kHex[] = "0123456789abcdef";
  std::string id = "run-";
  uint64_t v = rng();
  for (int i = 0; i < 16; ++i, v >>= 4) id.push_back(kHex[v & 15]);
  return id;
}

}  // namespace

SidecarClient::SidecarClient(const std::string& target, std::string token, ClientOptions options)
    : token_(std::move(token)),
      options_(options),
      channel_(MakeChannel(target, options)),
      sidecar_(v1::SidecarService::NewStub(channel_)),
      sessions_(v1::SessionService::NewStub(channel_)),
      agent_(v1::AgentService::NewStub(channel_)) {}

SidecarClient::SidecarClient(const SidecarProcess& process, ClientOptions options)
    : SidecarClient(process.target(), process.token(), options) {}

bool SidecarClient::WaitForConnected(std::chrono::milliseconds timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

void SidecarClient::Prepare(grpc::ClientContext* context, bool unary) const {
  // Plain metadata, not call credentials: gRPC drops those on insecure channels.
  context->AddMetadata("authorization", "Bearer " + token_);
  if (unary && options_.call_timeout.count() > 0)
    context->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
}

template <class Stub, class Req, class Resp>
Status SidecarClient::Unary(Stub* stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                           const Req& request, Resp* response) {
  grpc::ClientContext context;
  Prepare(&context, true);
  Resp scratch;
  grpc::Status status = (stub->*method)(&context, request, response != nullptr ? response : &scratch);
  return StatusFromCall(status, context);
}

Status SidecarClient::GetInfo(const v1::GetInfoRequest& request, v1::GetInfoResponse* response) {
  return Unary(sidecar_.get(), &v1::SidecarService::Stub::GetInfo, request, response);
}

Status SidecarClient::Shutdown(const std::string& reason) {
  v1::ShutdownRequest request;
  request.set_reason(reason);
  v1::ShutdownResponse response;
  return Unary(sidecar_.get(), &v1::SidecarService::Stub::Shutdown, request, &response);
}

Status SidecarClient::OpenSession(const v1::OpenSessionRequest& request, v1::OpenSessionResponse* response) {
  return Unary(sessions_.get(), &v1::SessionService::Stub::OpenSession, request, response);
}

Status SidecarClient::CloseSession(const std::string& session_id, v1::CloseSessionResponse* response) {
  v1::CloseSessionRequest request;
  request.set_session_id(session_id);
  return Unary(sessions_.get(), &v1::SessionService::Stub::CloseSession, request, response);
}

Status SidecarClient::ApplyDeltas(const v1::ApplyDeltasRequest& request, v1::ApplyDeltasResponse* response) {
  return Unary(sessions_.get(), &v1::SessionService::Stub::ApplyDeltas, request, response);
}

Status SidecarClient::ReplaceState(const v1::ReplaceStateRequest& request, v1::ReplaceStateResponse* response) {
  return Unary(sessions_.get(), &v1::SessionService::Stub::ReplaceState, request, response);
}

Status SidecarClient::GetState(const v1::GetStateRequest& request, v1::GetStateResponse* response) {
  return Unary(sessions_.get(), &v1::SessionService::Stub::GetState, request, response);
}

Status SidecarClient::ExportSession(const std::string& session_id, v1::ExportSessionResponse* response) {
  v1::ExportSessionRequest request;
  request.set_session_id(session_id);
  return Unary(sessions_.get(), &v1::SessionService::Stub::ExportSession, request, response);
}

Status SidecarClient::ImportSession(const v1::ImportSessionRequest& request, v1::ImportSessionResponse* response) {
  return Unary(sessions_.get(), &v1::SessionService::Stub::ImportSession, request, response);
}

std::unique_ptr<DeltaStream> SidecarClient::StreamDeltas() {
  std::unique_ptr<DeltaStream> stream(new DeltaStream());
  Prepare(&stream->context_, false);
  stream->stream_ = sessions_->StreamDeltas(&stream->context_);
  return stream;
}

std::unique_ptr<RunHandle> SidecarClient::StartRun(v1::RunRequest request, RunCallback callback) {
  if (request.run_id().empty()) request.set_run_id(MakeRunId());
  std::unique_ptr<RunHandle> handle(new RunHandle(this, request.run_id()));
  Prepare(&handle->context_, false);
  RunHandle* raw = handle.get();
  v1::AgentService::Stub* stub = agent_.get();
  // The call starts on the run's thread: even sending the request never blocks the caller.
  handle->thread_ = std::thread([raw, stub, req = std::move(request), cb = std::move(callback)]() mutable {
    raw->Read(stub->Run(&raw->context_, req), std::move(cb));
  });
  return handle;
}

Status SidecarClient::Run(v1::RunRequest request, RunCallback callback) {
  return StartRun(std::move(request), std::move(callback))->Wait();
}

Status SidecarClient::CancelRun(const std::string& run_id) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  v1::CancelRunResponse response;
  return Unary(agent_.get(), &v1::AgentService::Stub::CancelRun, request, &response);
}

Status SidecarClient::PreviewPrompt(const v1::PreviewPromptRequest& request, v1::PreviewPromptResponse* response) {
  return Unary(agent_.get(), &v1::AgentService::Stub::PreviewPrompt, request, response);
}

Status SidecarClient::ReadTranscript(const v1::ReadTranscriptRequest& request,
                                     v1::ReadTranscriptResponse* response) {
  return Unary(agent_.get(), &v1::AgentService::Stub::ReadTranscript, request, response);
}

}  // namespace game_sidecar
