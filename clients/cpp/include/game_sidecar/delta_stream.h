// StreamDeltas: one long-lived bidirectional stream for per-tick state updates.
// One response per request, in order; a rejected batch is reported in its
// response and the stream goes on.
#pragma once

#include <memory>
#include <vector>

#include "game_sidecar/status.h"
#include "game_sidecar/v1/session_service.pb.h"

namespace game_sidecar {

class SidecarClient;
namespace internal {
class DeltaCall;
}

// One writer thread and one reader thread may use it at once (gRPC's rule);
// Apply is for a single thread that writes and reads in turn. It shares the
// client's connection, so it may outlive the SidecarClient that opened it.
class DeltaStream {
 public:
  ~DeltaStream();  // cancels the stream if Finish was not called
  DeltaStream(const DeltaStream&) = delete;
  DeltaStream& operator=(const DeltaStream&) = delete;

  // Sends one batch. False when the stream is broken: call Finish for the status.
  bool Write(const sidecar::v1::StreamDeltasRequest& request);
  // Blocks for the next response. False at the end of the stream.
  bool Read(sidecar::v1::StreamDeltasResponse* response);
  // Write then Read: the batch's outcome as a Status, like ApplyDeltas would
  // give (a rejected batch's ErrorDetail becomes its code, reason and metadata),
  // with the response (revision, replayed) in `response`.
  Status Apply(const sidecar::v1::StreamDeltasRequest& request, sidecar::v1::StreamDeltasResponse* response);
  // Ends the stream: no more writes, reads what the sidecar still sends (into
  // `rest` when given), and returns the stream's status.
  Status Finish(std::vector<sidecar::v1::StreamDeltasResponse>* rest = nullptr);
  // Aborts the stream at once. Safe from any thread.
  void Cancel();

 private:
  friend class SidecarClient;
  explicit DeltaStream(std::unique_ptr<internal::DeltaCall> call);

  std::unique_ptr<internal::DeltaCall> call_;
};

// An in-stream ErrorDetail as a Status.
Status StatusFromDetail(const sidecar::v1::ErrorDetail& detail);

}  // namespace game_sidecar
