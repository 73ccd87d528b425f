// Helpers for the tests that kill the real sidecar (test_crash.cpp,
// test_tracked_writes.cpp): a state dir, the process's reports, restart options.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include "e2e_support.h"

namespace crash {

namespace v1 = ::sidecar::v1;
using game_sidecar::RestartOutcome;
using game_sidecar::RestartPolicy;
using game_sidecar::SidecarExit;
using game_sidecar::SidecarStatus;
using game_sidecar::Status;

constexpr auto kGenerous = std::chrono::seconds(30);

// A fresh --state-dir, removed with its journal at the end.
struct StateDir {
  std::string path;
  StateDir() {
    char tmpl[] = "/tmp/gs-cpp-state-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~StateDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// Everything the process reports, collected from its supervisor thread.
struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<SidecarStatus> statuses;
  std::vector<SidecarExit> exits;
  std::vector<RestartOutcome> restarts;

  void Watch(game_sidecar::SidecarProcess& p) {
    p.on_status([this](SidecarStatus s) { Add([&] { statuses.push_back(s); }); });
    p.on_exit([this](const SidecarExit& e) { Add([&] { exits.push_back(e); }); });
    p.on_restart([this](const RestartOutcome& o) { Add([&] { restarts.push_back(o); }); });
  }
  template <class F>
  void Add(F f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      f();
    }
    cv.notify_all();
  }
  bool WaitRestarts(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kGenerous, [&] { return restarts.size() >= n; });
  }
};

inline game_sidecar::SidecarOptions WithRestart(game_sidecar::SidecarOptions o, int max_restarts = 5) {
  RestartPolicy policy;
  policy.max_restarts = max_restarts;
  policy.backoff_initial = std::chrono::milliseconds(50);
  o.restart = policy;
  return o;
}

inline game_sidecar::SidecarOptions WithStateDir(game_sidecar::SidecarOptions o, const StateDir& dir) {
  o.args.push_back("--state-dir");
  o.args.push_back(dir.path);
  return o;
}

inline v1::DeltaOp Fact(const std::string& key, int64_t value) {
  v1::DeltaOp op;
  op.mutable_set_scene_fact()->set_key(key);
  op.mutable_set_scene_fact()->mutable_value()->set_int_value(value);
  return op;
}

inline v1::GetStateResponse State(game_sidecar::SidecarClient& client, const std::string& session) {
  v1::GetStateRequest get;
  get.set_session_id(session);
  v1::GetStateResponse state;
  Status st = client.GetState(get, &state);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return state;
}

}  // namespace crash
