// The one JSON line the sidecar prints on stdout once it serves (docs/protocol.md, "The handshake"):
// {"sidecar":"game-sidecar","protocol":1,"transport":"unix"|"tcp","address":"...",
//  "token":"...","pid":N,"version":"x.y.z"}
#pragma once

#include <cstdint>
#include <string>

namespace game_sidecar {

// The protocol version this client speaks.
constexpr int kProtocolVersion = 1;

struct Handshake {
  std::string transport;  // "unix" or "tcp"
  // Socket path for "unix"; "host:port" for "tcp".
  std::string address;
  // Present only when the sidecar generated the token itself.
  std::string token;
  int64_t pid = 0;
  std::string version;
  int protocol = 0;
};

// Parses and validates one handshake line. Returns false with a precise `error`
// when the line is not JSON, is not from a sidecar, speaks another protocol, or
// lacks a field.
bool ParseHandshake(const std::string& line, Handshake* out, std::string* error);

// The gRPC channel target for a handshake: "unix:/path/sock" or "127.0.0.1:port".
std::string GrpcTarget(const Handshake& handshake);

}  // namespace game_sidecar
