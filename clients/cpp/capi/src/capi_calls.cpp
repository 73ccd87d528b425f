// Results, JSON and the unary calls: one table maps a method name to the
// SidecarClient call, with the request and response as proto3 JSON.
#include <cstdio>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include "capi_internal.h"

namespace v1 = sidecar::v1;
namespace gs_ns = game_sidecar;

namespace game_sidecar_c {

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::unique_ptr<game_sidecar_result> LocalError(int code, std::string reason, std::string message) {
  auto r = std::make_unique<game_sidecar_result>();
  r->code = code;
  r->reason = std::move(reason);
  r->message = std::move(message);
  return r;
}

std::unique_ptr<game_sidecar_result> FromStatus(const gs_ns::Status& status) {
  auto r = std::make_unique<game_sidecar_result>();
  r->code = static_cast<int>(status.code);
  r->reason = status.reason;
  r->message = status.message;
  std::string meta = "{";
  for (const auto& kv : status.metadata) {
    if (meta.size() > 1) meta += ",";
    meta += "\"" + JsonEscape(kv.first) + "\":\"" + JsonEscape(kv.second) + "\"";
  }
  r->metadata_json = meta + "}";
  return r;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

bool FromJson(const char* json, google::protobuf::Message* message, std::string* error) {
  if (json == nullptr || *json == '\0') return true;
  google::protobuf::util::JsonParseOptions options;  // unknown fields are an error: a typo must not pass silently
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (status.ok()) return true;
  *error = std::string("bad ") + message->GetDescriptor()->name() + " JSON: " + std::string(status.message());
  return false;
}

namespace {

// The revision a response carries, read by field name so the table stays generic.
int64_t RevisionOf(const google::protobuf::Message& response) {
  const google::protobuf::FieldDescriptor* field = response.GetDescriptor()->FindFieldByName("revision");
  if (field == nullptr || field->type() != google::protobuf::FieldDescriptor::TYPE_INT64 || field->is_repeated()) {
    return -1;
  }
  return response.GetReflection()->GetInt64(response, field);
}

// `request` is the method's own message (ParseUnary made it from the method's name).
template <class Request, class Response, class Call>
std::unique_ptr<game_sidecar_result> Invoke(const google::protobuf::Message& request, Call call) {
  if (request.GetDescriptor() != Request::descriptor()) {
    return LocalError(GAME_SIDECAR_INTERNAL, "", "a " + request.GetDescriptor()->name() + " for a " +
                                                     Request::descriptor()->name() + " call");
  }
  Response response;
  return Answer(call(static_cast<const Request&>(request), &response), response);
}

}  // namespace

std::unique_ptr<game_sidecar_result> Answer(const gs_ns::Status& status, const google::protobuf::Message& response) {
  auto result = FromStatus(status);
  if (status.ok()) {
    result->json = ToJson(response);
    result->revision = RevisionOf(response);
  }
  return result;
}

std::unique_ptr<google::protobuf::Message> ParseUnary(const std::string& method, const std::string& json,
                                                      std::string* error) {
  const google::protobuf::Descriptor* type =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName("sidecar.v1." + method + "Request");
  if (type == nullptr) {
    *error = "unknown method \"" + method + "\"";
    return nullptr;
  }
  std::unique_ptr<google::protobuf::Message> request(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(type)->New());
  if (!FromJson(json.c_str(), request.get(), error)) return nullptr;
  return request;
}

std::unique_ptr<game_sidecar_result> InvokeUnary(gs_ns::SidecarClient& c, const std::string& method,
                                                 const google::protobuf::Message& request) {
  using gs_ns::Status;
  if (method == "GetInfo") {
    return Invoke<v1::GetInfoRequest, v1::GetInfoResponse>(
        request, [&](const v1::GetInfoRequest& q, v1::GetInfoResponse* p) { return c.GetInfo(q, p); });
  }
  if (method == "Shutdown") {
    return Invoke<v1::ShutdownRequest, v1::ShutdownResponse>(
        request, [&](const v1::ShutdownRequest& q, v1::ShutdownResponse*) { return c.Shutdown(q.reason()); });
  }
  if (method == "OpenSession") {
    return Invoke<v1::OpenSessionRequest, v1::OpenSessionResponse>(
        request, [&](const v1::OpenSessionRequest& q, v1::OpenSessionResponse* p) { return c.OpenSession(q, p); });
  }
  if (method == "CloseSession") {
    return Invoke<v1::CloseSessionRequest, v1::CloseSessionResponse>(
        request, [&](const v1::CloseSessionRequest& q, v1::CloseSessionResponse* p) { return c.CloseSession(q.session_id(), p); });
  }
  if (method == "ApplyDeltas") {
    return Invoke<v1::ApplyDeltasRequest, v1::ApplyDeltasResponse>(
        request, [&](const v1::ApplyDeltasRequest& q, v1::ApplyDeltasResponse* p) { return c.ApplyDeltas(q, p); });
  }
  if (method == "ReplaceState") {
    return Invoke<v1::ReplaceStateRequest, v1::ReplaceStateResponse>(
        request, [&](const v1::ReplaceStateRequest& q, v1::ReplaceStateResponse* p) { return c.ReplaceState(q, p); });
  }
  if (method == "GetState") {
    return Invoke<v1::GetStateRequest, v1::GetStateResponse>(
        request, [&](const v1::GetStateRequest& q, v1::GetStateResponse* p) { return c.GetState(q, p); });
  }
  if (method == "ExportSession") {
    return Invoke<v1::ExportSessionRequest, v1::ExportSessionResponse>(
        request, [&](const v1::ExportSessionRequest& q, v1::ExportSessionResponse* p) { return c.ExportSession(q.session_id(), p); });
  }
  if (method == "ImportSession") {
    return Invoke<v1::ImportSessionRequest, v1::ImportSessionResponse>(
        request, [&](const v1::ImportSessionRequest& q, v1::ImportSessionResponse* p) { return c.ImportSession(q, p); });
  }
  if (method == "CancelRun") {
    return Invoke<v1::CancelRunRequest, v1::CancelRunResponse>(
        request, [&](const v1::CancelRunRequest& q, v1::CancelRunResponse*) { return c.CancelRun(q.run_id()); });
  }
  if (method == "PreviewPrompt") {
    return Invoke<v1::PreviewPromptRequest, v1::PreviewPromptResponse>(
        request, [&](const v1::PreviewPromptRequest& q, v1::PreviewPromptResponse* p) { return c.PreviewPrompt(q, p); });
  }
  if (method == "ReadTranscript") {
    return Invoke<v1::ReadTranscriptRequest, v1::ReadTranscriptResponse>(
        request, [&](const v1::ReadTranscriptRequest& q, v1::ReadTranscriptResponse* p) { return c.ReadTranscript(q, p); });
  }
  return LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", "unknown method \"" + method + "\"");
}

bool RequestSession(const google::protobuf::Message* request, std::string* session) {
  session->clear();
  if (request == nullptr) return true;  // an unknown method or bad JSON: refused without a call
  const google::protobuf::FieldDescriptor* field = request->GetDescriptor()->FindFieldByName("session_id");
  if (field == nullptr || field->type() != google::protobuf::FieldDescriptor::TYPE_STRING) return true;
  *session = request->GetReflection()->GetString(*request, field);
  return !session->empty() || request->GetDescriptor() != v1::ImportSessionRequest::descriptor();
}

std::unique_ptr<game_sidecar_result> InvokeApply(gs_ns::SidecarClient& c, const v1::ApplyDeltasRequest& request) {
  v1::ApplyDeltasResponse response;
  return Answer(c.ApplyDeltas(request, &response), response);
}

}  // namespace game_sidecar_c

namespace {

using game_sidecar_c::LocalError;
using game_sidecar_c::PendingEvent;

std::unique_ptr<game_sidecar_result> NoSidecar() {
  return LocalError(GAME_SIDECAR_FAILED_PRECONDITION, "", "no sidecar: launch or connect first");
}

bool BuildApply(const char* session_id, int64_t base_revision, const char* delta_id, const game_sidecar_batch* batch,
                v1::ApplyDeltasRequest* request, std::string* error) {
  if (session_id == nullptr || *session_id == '\0') {
    *error = "session_id is empty";
    return false;
  }
  if (batch == nullptr) {
    *error = "batch is NULL";
    return false;
  }
  request->set_session_id(session_id);
  request->set_base_revision(base_revision);
  if (delta_id) request->set_delta_id(delta_id);
  for (const v1::DeltaOp& op : batch->ops) *request->add_ops() = op;
  return true;
}

}  // namespace

extern "C" {

int game_sidecar_result_code(const game_sidecar_result* r) { return r ? r->code : GAME_SIDECAR_INTERNAL; }
const char* game_sidecar_result_reason(const game_sidecar_result* r) { return r ? r->reason.c_str() : ""; }
const char* game_sidecar_result_message(const game_sidecar_result* r) { return r ? r->message.c_str() : ""; }
const char* game_sidecar_result_metadata_json(const game_sidecar_result* r) { return r ? r->metadata_json.c_str() : "{}"; }
const char* game_sidecar_result_json(const game_sidecar_result* r) { return r ? r->json.c_str() : ""; }
int64_t game_sidecar_result_revision(const game_sidecar_result* r) { return r && r->code == 0 ? r->revision : -1; }
const char* game_sidecar_result_stderr_tail(const game_sidecar_result* r) { return r ? r->stderr_tail.c_str() : ""; }
void game_sidecar_result_free(game_sidecar_result* r) { delete r; }

game_sidecar_result* game_sidecar_call(game_sidecar_host* gs, const char* method, const char* request_json) {
  auto client = gs->Client();
  if (!client) return NoSidecar().release();
  std::string error;
  auto request = game_sidecar_c::ParseUnary(method ? method : "", request_json ? request_json : "", &error);
  if (!request) return LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error).release();
  return game_sidecar_c::InvokeUnary(*client, method ? method : "", *request).release();
}

uint64_t game_sidecar_call_async(game_sidecar_host* gs, const char* method, const char* request_json,
                                 game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  std::string m = method ? method : "";
  std::string json = request_json ? request_json : "";
  // Parsed once, on the worker (the JSON may be a whole saved world: not on the game
  // thread), to route the call to its session's lane and to send it there.
  gs->Submit([gs, handle, callback, user_data, m, json] {
    std::string error;
    std::shared_ptr<google::protobuf::Message> request = game_sidecar_c::ParseUnary(m, json, &error);
    auto call = [gs, handle, callback, user_data, m, request, error] {
      PendingEvent event;
      event.kind = GAME_SIDECAR_EVENT_CALL_DONE;
      event.handle = handle;
      event.callback = callback;
      event.user_data = user_data;
      auto client = gs->Client();  // looked up when it runs: after a launch queued before it
      if (!client) {
        event.result = NoSidecar();
      } else {
        event.result = request ? game_sidecar_c::InvokeUnary(*client, m, *request)
                               : LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error);
      }
      gs->Post(std::move(event));
    };
    std::string session;
    if (game_sidecar_c::RequestSession(request.get(), &session)) {
      gs->lanes.Submit(session, call);
    } else {
      gs->lanes.WaitIdle();  // its session is known only to the sidecar: after everything before it
      call();
    }
  });
  return handle;
}

game_sidecar_result* game_sidecar_apply(game_sidecar_host* gs, const char* session_id, int64_t base_revision,
                                        const char* delta_id, const game_sidecar_batch* batch) {
  v1::ApplyDeltasRequest request;
  std::string error;
  if (!BuildApply(session_id, base_revision, delta_id, batch, &request, &error)) {
    return LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error).release();
  }
  auto client = gs->Client();
  if (!client) return NoSidecar().release();
  return game_sidecar_c::InvokeApply(*client, request).release();
}

uint64_t game_sidecar_apply_async(game_sidecar_host* gs, const char* session_id, int64_t base_revision,
                                  const char* delta_id, const game_sidecar_batch* batch,
                                  game_sidecar_callback callback, void* user_data) {
  uint64_t handle = gs->NextHandle();
  auto request = std::make_shared<v1::ApplyDeltasRequest>();
  std::string error;
  bool ok = BuildApply(session_id, base_revision, delta_id, batch, request.get(), &error);
  gs->SubmitForSession(ok ? request->session_id() : std::string(), [gs, handle, callback, user_data, request, ok, error] {
    PendingEvent event;
    event.kind = GAME_SIDECAR_EVENT_CALL_DONE;
    event.handle = handle;
    event.callback = callback;
    event.user_data = user_data;
    auto client = gs->Client();
    if (!ok) {
      event.result = LocalError(GAME_SIDECAR_INVALID_ARGUMENT, "INVALID_REQUEST", error);
    } else {
      event.result = client ? game_sidecar_c::InvokeApply(*client, *request) : NoSidecar();
    }
    gs->Post(std::move(event));
  });
  return handle;
}

}  // extern "C"
