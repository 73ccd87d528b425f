// Decodes the sidecar's error trailers into game_sidecar::Status.
#include "game_sidecar/status.h"

#include "rpc_status_wire.pb.h"

namespace game_sidecar {
namespace {

constexpr char kReasonKey[] = "sidecar-reason";
constexpr char kErrorInfoType[] = "google.rpc.ErrorInfo";
constexpr char kErrorDomain[] = "game-sidecar";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads the first ErrorInfo from grpc-status-details-bin (a serialized google.rpc.Status).
void ApplyErrorInfo(const std::string& details, Status* out) {
  ::game_sidecar_client::wire::RpcStatus rpc_status;
  if (details.empty() || !rpc_status.ParseFromString(details)) return;
  for (const auto& any : rpc_status.details()) {
    if (!EndsWith(any.type_url(), std::string("/") + kErrorInfoType)) continue;
    ::game_sidecar_client::wire::RpcErrorInfo info;
    if (!info.ParseFromString(any.value())) continue;
    // Only trust a reason that names our domain; a proxy could add its own.
    if (out->reason.empty() && info.domain() == kErrorDomain) out->reason = info.reason();
    for (const auto& kv : info.metadata()) out->metadata[kv.first] = kv.second;
    return;
  }
}

}  // namespace

Status Status::Local(grpc::StatusCode code, std::string reason, std::string message) {
  Status s;
  s.code = code;
  s.reason = std::move(reason);
  s.message = std::move(message);
  return s;
}

std::string Status::ToString() const {
  std::string out = StatusCodeName(code);
  if (!reason.empty()) out += "/" + reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

Status StatusFromCall(const grpc::Status& status, const grpc::ClientContext& context) {
  Status out;
  out.code = status.error_code();
  if (status.ok()) return out;
  out.message = status.error_message();
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kReasonKey);
  if (it != trailers.end()) out.reason.assign(it->second.data(), it->second.size());
  ApplyErrorInfo(status.error_details(), &out);
  return out;
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN_CODE";
  }
}

}  // namespace game_sidecar
