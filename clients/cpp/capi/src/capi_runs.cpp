// Runs through the C ABI: a run's events are copied off gRPC's callback
// thread into the object's queue, tagged with the run's handle and callback,
// and reach the game only through game_sidecar_drain.
#include <utility>

#include "capi_internal.h"
#include "run_id.h"

namespace v1 = sidecar::v1;
namespace gs_ns = game_sidecar;
using game_sidecar_c::LocalError;
using game_sidecar_c::PendingEvent;

namespace {

int RunKind(gs_ns::RunEventKind kind) {
  switch (kind) {
    case gs_ns::RunEventKind::kStarted: return GAME_SIDECAR_RUN_STARTED;
    case gs_ns::RunEventKind::kText: return GAME_SIDECAR_RUN_TEXT;
    case gs_ns::RunEventKind::kAttemptRejected: return GAME_SIDECAR_RUN_ATTEMPT_REJECTED;
    case gs_ns::RunEventKind::kAction: return GAME_SIDECAR_RUN_ACTION;
    case gs_ns::RunEventKind::kNotes: return GAME_SIDECAR_RUN_NOTES;
    case gs_ns::RunEventKind::kUsage: return GAME_SIDECAR_RUN_USAGE;
    case gs_ns::RunEventKind::kFinished: return GAME_SIDECAR_RUN_FINISHED;
    case gs_ns::RunEventKind::kError: return GAME_SIDECAR_RUN_ERROR;
  }
  return GAME_SIDECAR_RUN_ERROR;
}

PendingEvent RunError(uint64_t handle, const std::string& run_id, std::unique_ptr<game_sidecar_result> result) {
  PendingEvent event;
  event.kind = GAME_SIDECAR_EVENT_RUN;
  event.handle = handle;
  event.run_kind = GAME_SIDECAR_RUN_ERROR;
  event.run_id = run_id;
  event.result = std::move(result);
  event.final_run_event = true;
  return event;
}

bool BuildRun(const game_sidecar_run_request* in, v1::RunRequest* out, std::string* error) {
  if (in == nullptr || in->struct_size < sizeof(game_sidecar_run_request)) {
    *error = "run request missing, or struct_size smaller than this library's game_sidecar_run_request";
    return false;
  }
  auto str = [](const char* s) { return std::string(s ? s : ""); };
  out->set_session_id(str(in->session_id));
  out->set_actor_id(str(in->actor_id));
  out->set_run_id(str(in->run_id));
  out->set_profile(str(in->profile));
  switch (in->input) {
    case GAME_SIDECAR_INPUT_NARRATE:
      out->mutable_narrate()->set_text(str(in->text));
      break;
    case GAME_SIDECAR_INPUT_DIALOGUE:
      out->mutable_dialogue()->set_speaker_id(str(in->speaker_id));
      out->mutable_dialogue()->set_text(str(in->text));
      break;
    case GAME_SIDECAR_INPUT_DECIDE: {
      v1::DecisionInput* decision = out->mutable_decision();
      decision->set_situation(str(in->text));
      if (in->option_count > 0 && in->options == nullptr) {
        *error = "option_count > 0 with options NULL";
        return false;
      }
      for (size_t i = 0; i < in->option_count; ++i) {
        v1::ActionOption* option = decision->add_options();
        option->set_action_id(str(in->options[i].action_id));
        option->set_label(str(in->options[i].label));
        option->set_target_id(str(in->options[i].target_id));
      }
      break;
    }
    default:
      *error = "unknown input kind " + std::to_string(in->input) + " (GAME_SIDECAR_INPUT_NARRATE, _DIALOGUE or _DECIDE)";
      return false;
  }
  return true;
}

uint64_t StartRun(game_sidecar_host* gs, v1::RunRequest request, bool ok, const std::string& error,
                  game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  if (request.run_id().empty()) request.set_run_id(gs_ns::internal::NewRunId());
  {
    std::lock_guard<std::mutex> lock(gs->sidecar_mu);
    gs->runs[handle].run_id = request.run_id();
  }
  if (!ok) {
    PendingEvent event = RunError(handle, request.run_id(), LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error));
    event.callback = callback;
    event.user_data = user_data;
    gs->Post(std::move(event));
    return handle;
  }
  const std::string session = request.session_id();
  gs->SubmitForSession(session, [gs, handle, request, callback, user_data] {
    gs->StartRunOnWorker(handle, request, callback, user_data);
  });
  return handle;
}

}  // namespace

namespace game_sidecar_c {

PendingEvent FromRunUpdate(const gs_ns::RunUpdate& u) {
  PendingEvent event;
  event.kind = GAME_SIDECAR_EVENT_RUN;
  event.run_kind = RunKind(u.kind);
  event.run_id = u.run_id;
  event.seq = u.seq;
  if (u.kind == gs_ns::RunEventKind::kError) {
    event.result = FromStatus(u.error);
    event.final_run_event = true;
    return event;
  }
  event.final_run_event = u.kind == gs_ns::RunEventKind::kFinished;
  event.event_json = ToJson(u.event);
  if (u.kind == gs_ns::RunEventKind::kText) {
    event.text = u.text();
    event.sentence_end = u.sentence_end();
    for (const v1::EntityMention& m : u.event.text().mentions()) {
      event.mention_ids.push_back(m.entity_id());
      game_sidecar_mention c{};
      c.start = m.start();
      c.length = m.length();
      size_t start = m.start() < 0 ? 0 : static_cast<size_t>(m.start());
      size_t end = start + (m.length() < 0 ? 0 : static_cast<size_t>(m.length()));
      c.start_utf16 = game_sidecar_utf16_offset(event.text.data(), event.text.size(), start);
      c.length_utf16 = game_sidecar_utf16_offset(event.text.data(), event.text.size(), end) - c.start_utf16;
      event.mentions.push_back(c);
    }
  } else if (u.kind == gs_ns::RunEventKind::kAction) {
    event.action_id = u.event.action().action_id();
  }
  return event;
}

}  // namespace game_sidecar_c

void game_sidecar_host::StartRunOnWorker(uint64_t handle, v1::RunRequest request, game_sidecar_callback callback,
                                    void* user_data) {
  std::string run_id = request.run_id();
  auto c = Client();
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(sidecar_mu);
    auto it = runs.find(handle);
    cancelled = it == runs.end() || it->second.cancel_requested;
  }
  if (!c || cancelled) {
    PendingEvent event = RunError(handle, run_id,
                                  cancelled ? LocalError(GAME_SIDECAR_CANCELLED, "RUN_CANCELLED", "run cancelled before it started")
                                            : LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "no sidecar: launch or connect first"));
    event.callback = callback;
    event.user_data = user_data;
    Post(std::move(event));
    return;
  }
  // One final event per run, whatever the stream does after it: the game's
  // callback state for the run may be gone once it saw the end.
  auto ended = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<gs_ns::RunHandle> run =
      c->StartRun(std::move(request), [this, handle, callback, user_data, ended](const gs_ns::RunUpdate& update) {
        if (ended->load()) return;
        PendingEvent event = game_sidecar_c::FromRunUpdate(update);
        if (event.final_run_event) ended->store(true);
        event.handle = handle;
        event.callback = callback;
        event.user_data = user_data;
        Post(std::move(event));
      });
  std::lock_guard<std::mutex> lock(sidecar_mu);
  auto it = runs.find(handle);
  // Gone: the run already ended and its final event was drained; `run` is
  // destroyed here, on the worker.
  if (it == runs.end()) return;
  if (it->second.cancel_requested) run->Cancel();
  it->second.handle = std::move(run);
}

extern "C" {

uint64_t game_sidecar_run_start(game_sidecar_host* gs, const game_sidecar_run_request* request,
                                game_sidecar_callback callback, void* user_data) {
  v1::RunRequest built;
  std::string error;
  bool ok = BuildRun(request, &built, &error);
  return StartRun(gs, std::move(built), ok, error, callback, user_data);
}

uint64_t game_sidecar_run_start_json(game_sidecar_host* gs, const char* request_json, game_sidecar_callback callback,
                                     void* user_data) {
  v1::RunRequest built;
  std::string error;
  bool ok = game_sidecar_c::FromJson(request_json, &built, &error);
  return StartRun(gs, std::move(built), ok, error, callback, user_data);
}

int game_sidecar_run_cancel(game_sidecar_host* gs, uint64_t run) {
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  auto it = gs->runs.find(run);
  if (it == gs->runs.end()) return GAME_SIDECAR_NOT_FOUND;
  it->second.cancel_requested = true;
  if (it->second.handle) it->second.handle->Cancel();  // TryCancel: does not wait
  return GAME_SIDECAR_OK;
}

const char* game_sidecar_run_id(game_sidecar_host* gs, uint64_t run) {
  std::lock_guard<std::mutex> lock(gs->sidecar_mu);
  auto it = gs->runs.find(run);
  return it == gs->runs.end() ? "" : it->second.run_id.c_str();
}

int32_t game_sidecar_utf16_offset(const char* text, size_t text_len, size_t byte_offset) {
  if (text == nullptr) return 0;
  if (byte_offset > text_len) byte_offset = text_len;
  int32_t units = 0;
  size_t i = 0;
  while (i < byte_offset) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t width = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    units += width == 4 ? 2 : 1;  // a 4-byte character is a surrogate pair in UTF-16
    i += width;
  }
  return units;
}

}  // extern "C"
