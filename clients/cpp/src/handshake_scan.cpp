// HandshakeScan: which stdout line is the handshake (docs/protocol.md §1, "The
// handshake"). Apart from handshake.cpp and free of protobuf, so the launcher
// builds without it (GAME_SIDECAR_LAUNCHER_ONLY, the mingw-w64 build under Wine).
#include <string>

#include "game_sidecar/handshake.h"

namespace game_sidecar {
namespace {

// A small walk over one JSON object's top level: whether it is an object (well
// formed as far as the walk goes) with the key "sidecar". Values are skipped, not
// parsed: ParseHandshake validates the handshake afterwards.
class TopLevel {
 public:
  explicit TopLevel(const std::string& s) : s_(s) {}

  bool HasSidecarKey() {
    Ws();
    if (!Eat('{')) return false;
    Ws();
    if (Eat('}')) return false;
    bool found = false;
    for (;;) {
      std::string key;
      if (!String(&key)) return false;
      found = found || key == "sidecar";
      Ws();
      if (!Eat(':')) return false;
      Ws();
      if (!SkipValue()) return false;
      Ws();
      if (Eat('}')) break;
      if (!Eat(',')) return false;
      Ws();
    }
    Ws();
    return found && i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        c = s_[i_++];  // the escaped character (a \u sequence's digits follow as plain text)
      }
      if (out != nullptr) out->push_back(c);
    }
    return false;
  }
  bool SkipValue() {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') return String(nullptr);
    if (c == '{' || c == '[') {
      int depth = 0;
      while (i_ < s_.size()) {
        char d = s_[i_];
        if (d == '"') {
          if (!String(nullptr)) return false;
          continue;
        }
        ++i_;
        if (d == '{' || d == '[') ++depth;
        if ((d == '}' || d == ']') && --depth == 0) return true;
      }
      return false;
    }
    size_t start = i_;  // a number, true, false or null
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ' ' && s_[i_] != '\t') ++i_;
    return i_ > start;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

HandshakeScan::Verdict HandshakeScan::Offer(const std::string& line) {
  std::string text = line;
  if (!text.empty() && text.back() == '\r') text.pop_back();
  // A JSON object with a "sidecar" key is the handshake (right or wrong: then
  // ParseHandshake says precisely what is wrong with it); anything else is skipped.
  if (!text.empty() && text.front() == '{' && TopLevel(text).HasSidecarKey()) return Verdict::kHandshake;
  ++lines_;
  bytes_ += line.size() + 1;
  last_ = line.size() <= 200 ? line : line.substr(0, 200) + "...";
  return lines_ > kHandshakeSkipLines || bytes_ > kHandshakeSkipBytes ? Verdict::kGiveUp : Verdict::kSkip;
}

std::string HandshakeScan::Describe() const {
  if (lines_ == 0) return "";
  return "; " + std::to_string(lines_) + " stdout line" + (lines_ == 1 ? " was" : "s were") +
         " not a handshake, the last: " + last_;
}

}  // namespace game_sidecar
