// Handshake parsing. JSON goes through protobuf's own parser (into a
// google.protobuf.Struct) so the client needs no JSON library of its own.
#include "game_sidecar/handshake.h"


#include <cmath>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace game_sidecar {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& doc, const char* name) {
  auto it = doc.fields().find(name);
  return it == doc.fields().end() ? nullptr : &it->second;
}

bool StringField(const Struct& doc, const char* name, bool required, std::string* out, std::string* error) {
  const Value* v = Field(doc, name);
  if (v == nullptr) {
    if (required) *error = std::string("handshake lacks \"") + name + "\"";
    return !required;
  }
  if (v->kind_case() != Value::kStringValue) {
    *error = std::string("handshake field \"") + name + "\" is not a string";
    return false;
  }
  *out = v->string_value();
  return true;
}

bool IntField(const Struct& doc, const char* name, int64_t* out, std::string* error) {
  const Value* v = Field(doc, name);
  if (v == nullptr) {
    *error = std::string("handshake lacks \"") + name + "\"";
    return false;
  }
  double d = v->kind_case() == Value::kNumberValue ? v->number_value() : NAN;
  if (std::isnan(d) || d != std::floor(d)) {
    *error = std::string("handshake field \"") + name + "\" is not an integer";
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace

bool ParseHandshake(const std::string& line, Handshake* out, std::string* error) {
  Struct doc;
  auto parsed = google::protobuf::util::JsonStringToMessage(line, &doc);
  if (!parsed.ok()) {
    *error = "handshake is not a JSON object";
    return false;
  }
  std::string sidecar;
  if (!StringField(doc, "sidecar", true, &sidecar, error)) return false;
  if (sidecar != "game-sidecar") {
    *error = "handshake is from \"" + sidecar + "\", not game-sidecar";
    return false;
  }
  int64_t protocol = 0;
  if (!IntField(doc, "protocol", &protocol, error)) return false;
  if (protocol != kProtocolVersion) {
    *error = "sidecar speaks protocol " + std::to_string(protocol) + ", this client speaks " +
             std::to_string(kProtocolVersion);
    return false;
  }
  Handshake h;
  h.protocol = static_cast<int>(protocol);
  if (!StringField(doc, "transport", true, &h.transport, error)) return false;
  if (h.transport != "unix" && h.transport != "tcp") {
    *error = "unknown handshake transport \"" + h.transport + "\"";
    return false;
  }
  if (!StringField(doc, "address", true, &h.address, error)) return false;
  if (h.address.empty()) {
    *error = "handshake address is empty";
    return false;
  }
  if (!StringField(doc, "token", false, &h.token, error)) return false;
  if (!IntField(doc, "pid", &h.pid, error)) return false;
  if (!StringField(doc, "version", true, &h.version, error)) return false;
  *out = std::move(h);
  return true;
}

std::string GrpcTarget(const Handshake& handshake) {
  if (handshake.transport == "unix") return "unix:" + handshake.address;
  return handshake.address;
}

}  // namespace game_sidecar
