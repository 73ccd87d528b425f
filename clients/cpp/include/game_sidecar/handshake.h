// The one JSON line the sidecar prints on stdout once it serves (docs/protocol.md, "The handshake"):
// {"sidecar":"game-sidecar","protocol":1,"transport":"unix"|"tcp","address":"...",
//  "token":"...","pid":N,"version":"x.y.z"}
#pragma once

#include <cstddef>
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

// Finding the handshake on stdout (docs/protocol.md §1, "The handshake"): it is
// the first line that is a JSON object with a "sidecar" key. A launcher that
// merges stderr into stdout (Unreal's FPlatformProcess::CreateProc gives the
// child one pipe for both) sees the sidecar's JSON log lines first; those are
// skipped, up to a bound, so a program that is not a sidecar cannot keep the
// launcher reading for ever. SidecarProcess uses it; so can a launcher of your own.
// At most this many lines, and this many bytes (newlines counted), are skipped.
constexpr size_t kHandshakeSkipLines = 200;
constexpr size_t kHandshakeSkipBytes = 64 * 1024;

class HandshakeScan {
 public:
  enum class Verdict {
    kHandshake,  // this line is the handshake (ParseHandshake then validates it)
    kSkip,       // not a handshake: a log line (or noise); look at the next one
    kGiveUp,     // past the bound: no handshake will be accepted any more
  };
  Verdict Offer(const std::string& line);

  size_t skipped_lines() const { return lines_; }
  // "" when nothing was skipped; else "; 3 stdout lines before it were not a
  // handshake, the last: ..." for an error message.
  std::string Describe() const;

 private:
  size_t lines_ = 0;
  size_t bytes_ = 0;
  std::string last_;
};


// The gRPC channel target for a handshake: "unix:/path/sock" or "127.0.0.1:port".
std::string GrpcTarget(const Handshake& handshake);

}  // namespace game_sidecar
