// DeltaCall: the gRPC side of a DeltaStream (a synchronous bidirectional
// stream; the caller's own threads drive it).
#pragma once

#include <memory>

#include "connection.h"

namespace game_sidecar {
namespace internal {

struct DeltaCall {
  explicit DeltaCall(std::shared_ptr<Connection> c) : connection(std::move(c)) {
    connection->Prepare(&context, false);
    stream = connection->sessions().StreamDeltas(&context);
  }

  // Declaration order is destruction order reversed: the stream goes before
  // its context, and the connection (channel, stub) last.
  std::shared_ptr<Connection> connection;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::StreamDeltasRequest, v1::StreamDeltasResponse>> stream;
  bool finished = false;
};

}  // namespace internal
}  // namespace game_sidecar
