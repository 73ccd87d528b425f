// The one place a gRPC call's outcome becomes a game_sidecar::Status.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "status_decode.h"

namespace game_sidecar {
namespace internal {

inline Status StatusFromCall(const grpc::Status& status, const grpc::ClientContext& context) {
  if (status.ok()) return Status::Ok();
  std::string reason;
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kReasonTrailer);
  if (it != trailers.end()) reason.assign(it->second.data(), it->second.size());
  return DecodeStatus(static_cast<int>(status.error_code()), status.error_message(), status.error_details(), reason);
}

}  // namespace internal
}  // namespace game_sidecar
