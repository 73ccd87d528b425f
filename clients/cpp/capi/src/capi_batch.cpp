// game_sidecar_batch: the common delta ops built from plain C strings, so a
// game without protobuf or a JSON writer can still send typed state changes.
#include <cstring>
#include <string>

#include "capi_internal.h"

namespace v1 = sidecar::v1;

namespace {

std::string Str(const char* s) { return s ? s : ""; }

bool Empty(const char* s) { return s == nullptr || *s == '\0'; }

bool ParseKind(const char* name, v1::EntityKind* out) {
  std::string n = Str(name);
  if (n.rfind("ENTITY_KIND_", 0) != 0) n = "ENTITY_KIND_" + n;
  return v1::EntityKind_Parse(n, out) && *out != v1::ENTITY_KIND_UNSPECIFIED;
}

}  // namespace

extern "C" {

game_sidecar_batch* game_sidecar_batch_create(void) { return new (std::nothrow) game_sidecar_batch(); }
void game_sidecar_batch_free(game_sidecar_batch* b) { delete b; }
size_t game_sidecar_batch_size(const game_sidecar_batch* b) { return b ? b->ops.size() : 0; }

int game_sidecar_batch_upsert_entity(game_sidecar_batch* b, const char* id, const char* kind, const char* name,
                                     const char* description, const char* location_id) {
  v1::EntityKind k;
  if (b == nullptr || Empty(id) || !ParseKind(kind, &k)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  v1::Entity* e = op.mutable_upsert_entity()->mutable_entity();
  e->set_id(id);
  e->set_kind(k);
  e->set_name(Str(name));
  e->set_description(Str(description));
  e->set_location_id(Str(location_id));
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

int game_sidecar_batch_remove_entity(game_sidecar_batch* b, const char* id) {
  if (b == nullptr || Empty(id)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  op.mutable_remove_entity()->set_id(id);
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

int game_sidecar_batch_set_field(game_sidecar_batch* b, const char* entity_id, const char* field, const char* value) {
  if (b == nullptr || Empty(entity_id) || Empty(field)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  v1::PatchEntityOp* patch = op.mutable_patch_entity();
  patch->set_id(entity_id);
  if (value == nullptr) {
    patch->add_unset_fields(field);
  } else {
    (*patch->mutable_set_fields())[field].mutable_value()->set_string_value(value);
  }
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

int game_sidecar_batch_record_event(game_sidecar_batch* b, const char* text, const char* actor_id,
                                    const char* location_id) {
  if (b == nullptr || Empty(text)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  v1::GameEvent* e = op.mutable_record_event()->mutable_event();
  e->set_text(text);
  e->set_actor_id(Str(actor_id));
  e->set_location_id(Str(location_id));
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

int game_sidecar_batch_set_scene_fact(game_sidecar_batch* b, const char* key, const char* value) {
  if (b == nullptr || Empty(key)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  v1::SetSceneFactOp* fact = op.mutable_set_scene_fact();
  fact->set_key(key);
  if (value == nullptr) {
    fact->set_remove(true);
  } else {
    fact->mutable_value()->set_string_value(value);
  }
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

int game_sidecar_batch_add_json(game_sidecar_batch* b, const char* op_json) {
  if (b == nullptr || Empty(op_json)) return GAME_SIDECAR_INVALID_ARGUMENT;
  v1::DeltaOp op;
  std::string error;
  if (!game_sidecar_c::FromJson(op_json, &op, &error) || op.op_case() == v1::DeltaOp::OP_NOT_SET) {
    return GAME_SIDECAR_INVALID_ARGUMENT;
  }
  b->ops.push_back(std::move(op));
  return GAME_SIDECAR_OK;
}

}  // extern "C"
