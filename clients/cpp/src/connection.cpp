// Connection: channel setup and the token on every call.
#include "connection.h"

namespace game_sidecar {
namespace internal {
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

}  // namespace

Connection::Connection(const std::string& target, std::string token, ClientOptions options)
    : token_(std::move(token)),
      options_(options),
      channel_(MakeChannel(target, options)),
      sidecar_(v1::SidecarService::NewStub(channel_)),
      sessions_(v1::SessionService::NewStub(channel_)),
      agent_(v1::AgentService::NewStub(channel_)) {}

void Connection::Prepare(grpc::ClientContext* context, bool unary) const {
  // Plain metadata, not call credentials: gRPC drops those on insecure channels.
  context->AddMetadata("authorization", "Bearer " + token_);
  if (unary && options_.call_timeout.count() > 0)
    context->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
}

}  // namespace internal
}  // namespace game_sidecar
