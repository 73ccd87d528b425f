// Decoding the sidecar's error trailers into a Status, without gRPC types so
// unit tests can feed it the exact bytes the Python sidecar sends.
#pragma once

#include <string>

#include "game_sidecar/status.h"

namespace game_sidecar {
namespace internal {

// `details_bin` is grpc-status-details-bin (a serialized google.rpc.Status);
// `reason_trailer` the `sidecar-reason` trailing metadata ("" when absent). The
// reason comes from the trailer, falling back to the ErrorInfo in the details;
// metadata comes from the ErrorInfo.
Status DecodeStatus(int code, std::string message, const std::string& details_bin,
                    const std::string& reason_trailer);

constexpr char kReasonTrailer[] = "sidecar-reason";

}  // namespace internal
}  // namespace game_sidecar
