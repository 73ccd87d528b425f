// The outcome of a sidecar call: a gRPC status code plus the sidecar's stable
// reason string (proto/sidecar/v1/errors.proto, e.g. "STALE_REVISION").
//
// The public API reports errors by value, never by exception, because Unreal
// modules are usually built with exceptions off.
#pragma once

#include <map>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

namespace game_sidecar {

struct Status {
  grpc::StatusCode code = grpc::StatusCode::OK;
  // ErrorReason name without its prefix ("STALE_REVISION"); empty when the
  // error did not come from the sidecar (e.g. the connection failed).
  std::string reason;
  std::string message;
  // google.rpc.ErrorInfo metadata, e.g. {"current_revision": "7"} for STALE_REVISION.
  std::map<std::string, std::string> metadata;

  bool ok() const { return code == grpc::StatusCode::OK; }
  // "ABORTED/STALE_REVISION: base revision 3 is stale (current 4)".
  std::string ToString() const;

  static Status Ok() { return {}; }
  // A client-side error that never reached the sidecar.
  static Status Local(grpc::StatusCode code, std::string reason, std::string message);
};

// Builds a Status from a finished call: the reason comes from the
// `sidecar-reason` trailing metadata, falling back to the google.rpc.ErrorInfo in
// the status details; metadata comes from the ErrorInfo.
Status StatusFromCall(const grpc::Status& status, const grpc::ClientContext& context);

// Name of a gRPC code ("ABORTED").
const char* StatusCodeName(grpc::StatusCode code);

}  // namespace game_sidecar
