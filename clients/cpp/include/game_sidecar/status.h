// The outcome of a sidecar call: a status code plus the sidecar's stable
// reason string (proto/sidecar/v1/errors.proto, e.g. "STALE_REVISION").
//
// The public API reports errors by value, never by exception, because Unreal
// modules are usually built with exceptions off. No gRPC header is included by
// any game_sidecar/*.h: the codes below are the client's own.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "game_sidecar/v1/errors.pb.h"

namespace game_sidecar {

struct SidecarExit;  // sidecar_exit.h

// The gRPC status codes, with gRPC's numeric values (so an ErrorDetail's int
// code converts directly), without the gRPC header.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// Name of a code as gRPC spells it ("ABORTED"); "UNKNOWN_CODE" outside 0..16.
const char* StatusCodeName(StatusCode code);
// A wire integer (ErrorDetail.code, a gRPC status) as a StatusCode; values
// outside 0..16 become kUnknown.
StatusCode StatusCodeFromInt(int code);

struct Status {
  StatusCode code = StatusCode::kOk;
  // ErrorReason name without its prefix ("STALE_REVISION"); empty when the
  // error did not come from the sidecar (e.g. the connection failed).
  std::string reason;
  std::string message;
  // google.rpc.ErrorInfo metadata, e.g. {"current_revision": "7"} for STALE_REVISION.
  std::map<std::string, std::string> metadata;
  // For reason "SIDECAR_GONE" (the process exited or stopped answering; set by
  // this client, never sent by the sidecar): how it ended. Null otherwise.
  std::shared_ptr<const SidecarExit> sidecar_exit;
  // For "SIDECAR_GONE": a restart policy is relaunching the process (wait for
  // SidecarStatus::kReady, then call again). False when the game stopped it,
  // without a policy, or once the policy is used up (kFailed). Python's
  // SidecarGone.will_restart, C#'s SidecarGoneException.WillRestart.
  bool sidecar_will_restart = false;

  bool ok() const { return code == StatusCode::kOk; }
  // The sidecar process is gone: code kUnavailable, reason "SIDECAR_GONE" (or
  // "WRITE_KEPT", below), with sidecar_exit set.
  bool sidecar_gone() const { return reason == "SIDECAR_GONE" || write_kept(); }
  // TrackedSession::Apply: the write is not acknowledged yet and the tracked
  // session keeps it; it sends it once the restart re-opens the session and
  // reports it to on_pending. Never send it again (docs/protocol.md §1,
  // "Tracked writes across a restart"). Python's WriteKept.
  bool write_kept() const { return reason == "WRITE_KEPT"; }
  // TrackedSession: the write is not in the session and the client will not
  // send it (no restart follows, the restart lost the session, or the held
  // queue is full). Code kAborted; the game decides. Python's WriteNotApplied.
  bool write_not_applied() const { return reason == "WRITE_NOT_APPLIED"; }
  // `reason` as the proto enum (sidecar::v1::ERROR_REASON_STALE_REVISION...), for
  // a switch; ERROR_REASON_UNSPECIFIED when empty or newer than this client.
  sidecar::v1::ErrorReason reason_code() const;
  // True when the failed request may succeed if sent again unchanged: reason
  // QUEUE_FULL, PROVIDER_TIMEOUT, PROVIDER_RATE_LIMITED, PROVIDER_UNAVAILABLE or
  // STORAGE_FULL (back off first), or SIDECAR_GONE with sidecar_will_restart (once
  // the status is kReady again); never WRITE_KEPT (the tracked session sends it).
  // Python's is_retryable, C#'s IsRetryable.
  bool retryable() const;
  // "ABORTED/STALE_REVISION: base revision 3 is stale (current 4)".
  std::string ToString() const;

  static Status Ok() { return {}; }
  // A client-side error that never reached the sidecar.
  static Status Local(StatusCode code, std::string reason, std::string message);
};

}  // namespace game_sidecar
