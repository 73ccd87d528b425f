// DeltaStream: the StreamDeltas bidirectional stream with a Status per batch.
#include "game_sidecar/delta_stream.h"

#include "delta_call.h"

namespace game_sidecar {

Status StatusFromDetail(const sidecar::v1::ErrorDetail& detail) {
  Status s;
  s.code = StatusCodeFromInt(detail.code());
  s.reason = detail.reason();
  s.message = detail.message();
  for (const auto& kv : detail.metadata()) s.metadata[kv.first] = kv.second;
  return s;
}

DeltaStream::DeltaStream(std::unique_ptr<internal::DeltaCall> call) : call_(std::move(call)) {}

DeltaStream::~DeltaStream() {
  if (!call_->finished && call_->stream) {
    call_->context.TryCancel();
    // Finish reaps the call; after a cancel it returns at once.
    sidecar::v1::StreamDeltasResponse ignored;
    while (call_->stream->Read(&ignored)) {
    }
    call_->stream->Finish();
  }
}

bool DeltaStream::Write(const sidecar::v1::StreamDeltasRequest& request) {
  return call_->stream && call_->stream->Write(request);
}

bool DeltaStream::Read(sidecar::v1::StreamDeltasResponse* response) {
  return call_->stream && call_->stream->Read(response);
}

void DeltaStream::Cancel() {
  call_->cancelled = true;
  call_->context.TryCancel();
}

Status DeltaStream::Apply(const sidecar::v1::StreamDeltasRequest& request,
                          sidecar::v1::StreamDeltasResponse* response) {
  sidecar::v1::StreamDeltasResponse scratch;
  if (response == nullptr) response = &scratch;
  if (!Write(request) || !Read(response)) {
    // A broken stream reports why (the first Finish's status) on every later batch too.
    Status s = call_->finished && !call_->final.ok() ? call_->final : Finish();
    if (s.ok()) s = Status::Local(StatusCode::kUnavailable, "", "delta stream ended");
    return s;
  }
  if (response->has_error()) return StatusFromDetail(response->error());
  return Status::Ok();
}

Status DeltaStream::Finish(std::vector<sidecar::v1::StreamDeltasResponse>* rest) {
  if (!call_->stream) return call_->gone;  // opened while the sidecar was gone
  if (call_->finished) return Status::Local(StatusCode::kFailedPrecondition, "", "delta stream already finished");
  call_->finished = true;
  call_->stream->WritesDone();
  sidecar::v1::StreamDeltasResponse response;
  while (call_->stream->Read(&response)) {
    if (rest != nullptr) rest->push_back(response);
  }
  Status status = internal::StatusFromCall(call_->stream->Finish(), call_->context);
  // A stream cut by the sidecar's exit ends with SIDECAR_GONE.
  call_->final = call_->connection->Settle(std::move(status), *call_->link, call_->cancelled);
  return call_->final;
}

}  // namespace game_sidecar
