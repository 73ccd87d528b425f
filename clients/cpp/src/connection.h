// The connection a SidecarClient, its runs and its delta streams share: the
// channel, the three stubs, the token and the options. Shared ownership is what
// lets a run outlive the client that started it.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/v1/agent_service.grpc.pb.h"
#include "game_sidecar/v1/session_service.grpc.pb.h"
#include "game_sidecar/v1/sidecar_service.grpc.pb.h"
#include "grpc_status.h"

namespace game_sidecar {
namespace internal {

class Connection {
 public:
  Connection(const std::string& target, std::string token, ClientOptions options);

  // Adds the token and, for unary calls, the deadline.
  void Prepare(grpc::ClientContext* context, bool unary) const;

  // One unary call with the token and deadline; `response` may be nullptr.
  template <class Stub, class Req, class Resp>
  Status Unary(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
               const Req& request, Resp* response) {
    grpc::ClientContext context;
    Prepare(&context, true);
    Resp scratch;
    grpc::Status status = (stub.*method)(&context, request, response != nullptr ? response : &scratch);
    return StatusFromCall(status, context);
  }

  grpc::Channel& channel() { return *channel_; }
  v1::SidecarService::Stub& sidecar() { return *sidecar_; }
  v1::SessionService::Stub& sessions() { return *sessions_; }
  v1::AgentService::Stub& agent() { return *agent_; }

 private:
  std::string token_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SidecarService::Stub> sidecar_;
  std::unique_ptr<v1::SessionService::Stub> sessions_;
  std::unique_ptr<v1::AgentService::Stub> agent_;
};

}  // namespace internal
}  // namespace game_sidecar
