// A whole world to the sidecar, however big: ReplaceState and ImportSession in
// one message up to SidecarClient::kChunkBytes, in pieces above it (the Chunked
// calls), since the server refuses any one message over its max_request_bytes.
// SidecarClient and TrackedSession both send worlds through these, so a resync
// through a tracker is no smaller than one through the client.
#pragma once

#include "connection.h"
#include "game_sidecar/status.h"
#include "game_sidecar/v1/session_service.pb.h"

namespace game_sidecar {
namespace internal {

Status ReplaceWorld(Connection& connection, const sidecar::v1::ReplaceStateRequest& request,
                    sidecar::v1::ReplaceStateResponse* response);
Status ImportWorld(Connection& connection, const sidecar::v1::ImportSessionRequest& request,
                   sidecar::v1::ImportSessionResponse* response);

}  // namespace internal
}  // namespace game_sidecar
