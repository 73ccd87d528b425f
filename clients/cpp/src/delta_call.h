// DeltaCall: the gRPC side of a DeltaStream (a synchronous bidirectional
// stream; the caller's own threads drive it).
#pragma once

#include <memory>

#include "connection.h"

namespace game_sidecar {
namespace internal {

struct DeltaCall {
  explicit DeltaCall(std::shared_ptr<Connection> c) : connection(std::move(c)) {
    link = connection->Acquire(&context, false, &gone);
    if (link) stream = link->sessions->StreamDeltas(&context);
  }
  ~DeltaCall() {
    stream.reset();
    if (link) connection->Release(&context);
  }

  // Declaration order is destruction order reversed: the stream goes before
  // its context, and the link (channel, stub) and connection last.
  std::shared_ptr<Connection> connection;
  std::shared_ptr<Link> link;  // null when the sidecar was gone at the start (see `gone`)
  Status gone;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::StreamDeltasRequest, v1::StreamDeltasResponse>> stream;
  bool finished = false;
  Status final;  // what Finish returned
  bool cancelled = false;  // Cancel() was called
};

}  // namespace internal
}  // namespace game_sidecar
