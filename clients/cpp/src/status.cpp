// Status: the client's own codes and their names; no gRPC here.
#include "game_sidecar/status.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

namespace game_sidecar {

Status Status::Local(StatusCode code, std::string reason, std::string message) {
  Status s;
  s.code = code;
  s.reason = std::move(reason);
  s.message = std::move(message);
  return s;
}

sidecar::v1::ErrorReason Status::reason_code() const {
  sidecar::v1::ErrorReason value = sidecar::v1::ERROR_REASON_UNSPECIFIED;
  // The wire carries the enum value's name without its prefix (errors.proto).
  if (reason.empty() || !sidecar::v1::ErrorReason_Parse("ERROR_REASON_" + reason, &value))
    return sidecar::v1::ERROR_REASON_UNSPECIFIED;
  return value;
}

bool Status::retryable() const {
  if (write_kept()) return false;  // sent again, it would be a second batch
  if (sidecar_gone()) return sidecar_will_restart;
  // Declared once, in errors.proto: the reasons marked [(retryable) = true] (sidecar.client's
  // RETRYABLE_REASONS reads the same option).
  if (reason.empty()) return false;
  const google::protobuf::EnumValueDescriptor* value =
      sidecar::v1::ErrorReason_descriptor()->FindValueByName("ERROR_REASON_" + reason);
  return value != nullptr && value->options().GetExtension(sidecar::v1::retryable);
}

std::string Status::ToString() const {
  std::string out = StatusCodeName(code);
  if (!reason.empty()) out += "/" + reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

StatusCode StatusCodeFromInt(int code) {
  if (code < 0 || code > static_cast<int>(StatusCode::kUnauthenticated)) return StatusCode::kUnknown;
  return static_cast<StatusCode>(code);
}

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

}  // namespace game_sidecar
