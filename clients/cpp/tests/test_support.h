// Shared by the test binaries: where the real sidecar and the fakes live, and
// small process helpers.
#pragma once

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <signal.h>
#include <string>
#include <thread>
#include <vector>

#include "game_sidecar/sidecar_process.h"

namespace testing_support {

inline std::string SidecarExe() {
  const char* env = std::getenv("GAME_SIDECAR_EXE");
  return env != nullptr && *env != '\0' ? env : GAME_SIDECAR_EXE_DEFAULT;
}

inline std::string TestsDir() { return TESTS_DIR; }

// Options that launch tests/fake_sidecar.sh in `mode`.
inline game_sidecar::SidecarOptions FakeOptions(const std::string& mode) {
  game_sidecar::SidecarOptions o;
  o.executable = "/bin/sh";
  o.args = {TestsDir() + "/fake_sidecar.sh", mode};
  o.handshake_timeout = std::chrono::milliseconds(5000);
  o.exit_grace = std::chrono::milliseconds(1000);
  o.terminate_grace = std::chrono::milliseconds(1000);
  o.liveness_interval = std::chrono::milliseconds(0);  // the fakes serve no gRPC
  return o;
}

// Options that launch the real sidecar with the scripted fake model profiles
// from tests/sidecar_test.toml (or `config`, "" for none: the embedded model).
inline game_sidecar::SidecarOptions RealOptions(const std::string& config = TestsDir() + "/sidecar_test.toml") {
  game_sidecar::SidecarOptions o;
  o.executable = SidecarExe();
  o.args = {"serve"};
  if (!config.empty()) {
    o.args.push_back("--config");
    o.args.push_back(config);
  }
  o.handshake_timeout = std::chrono::milliseconds(30000);  // a cold start on a busy 2-core box
  return o;
}

// A thread-safe collector for on_log lines.
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> Callback() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(l);
    };
  }
  bool Contains(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& l : lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

// True while `pid` names a live (not zombie) process.
inline bool Alive(int pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close_paren = content.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= content.size()) return false;
  return content[close_paren + 2] != 'Z' && content[close_paren + 2] != 'X';
}

// Polls `pred` until it holds or `limit` passes (liveness, not a timing assertion).
template <class Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace testing_support
