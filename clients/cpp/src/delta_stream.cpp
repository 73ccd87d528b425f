// DeltaStream: the StreamDeltas bidirectional stream with a Status per batch.
#include "game_sidecar/delta_stream.h"

namespace game_sidecar {

Status StatusFromDetail(const sidecar::v1::ErrorDetail& detail) {
  Status s;
  s.code = static_cast<grpc::StatusCode>(detail.code());
  s.reason = detail.reason();
  s.message = detail.message();
  for (const auto& kv : detail.metadata()) s.metadata[kv.first] = kv.second;
  return s;
}

DeltaStream::~DeltaStream() {
  if (!finished_) {
    context_.TryCancel();
    // Finish reaps the call; after a cancel it returns at once.
    sidecar::v1::StreamDeltasResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    stream_->Finish();
  }
}

bool DeltaStream::Write(const sidecar::v1::StreamDeltasRequest& request) { return stream_->Write(request); }

bool DeltaStream::Read(sidecar::v1::StreamDeltasResponse* response) { return stream_->Read(response); }

Status DeltaStream::Apply(const sidecar::v1::StreamDeltasRequest& request,
                          sidecar::v1::StreamDeltasResponse* response) {
  sidecar::v1::StreamDeltasResponse scratch;
  if (response == nullptr) response = &scratch;
  if (!stream_->Write(request) || !stream_->Read(response)) {
    Status s = Finish();
    if (s.ok()) s = Status::Local(grpc::StatusCode::UNAVAILABLE, "", "delta stream ended");
    return s;
  }
  if (response->has_error()) return StatusFromDetail(response->error());
  return Status::Ok();
}

Status DeltaStream::Finish(std::vector<sidecar::v1::StreamDeltasResponse>* rest) {
  if (finished_) return Status::Local(grpc::StatusCode::FAILED_PRECONDITION, "", "delta stream already finished");
  finished_ = true;
  stream_->WritesDone();
  sidecar::v1::StreamDeltasResponse response;
  while (stream_->Read(&response)) {
    if (rest != nullptr) rest->push_back(response);
  }
  return StatusFromCall(stream_->Finish(), context_);
}

}  // namespace game_sidecar
