// Reads google.rpc.ErrorInfo out of grpc-status-details-bin through the
// private wire-compatible messages (rpc_status_wire.proto).
#include "status_decode.h"

#include "rpc_status_wire.pb.h"

namespace game_sidecar {
namespace internal {
namespace {

constexpr char kErrorInfoType[] = "google.rpc.ErrorInfo";
constexpr char kErrorDomain[] = "game-sidecar";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads the first ErrorInfo from a serialized google.rpc.Status.
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

Status DecodeStatus(int code, std::string message, const std::string& details_bin,
                    const std::string& reason_trailer) {
  Status out;
  out.code = StatusCodeFromInt(code);
  if (out.ok()) return out;
  out.message = std::move(message);
  out.reason = reason_trailer;
  ApplyErrorInfo(details_bin, &out);
  return out;
}

}  // namespace internal
}  // namespace game_sidecar
