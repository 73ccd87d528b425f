// bench_async: what the game thread pays with the non-blocking forms
// (CallQueue, issue 25 item 2) beside the blocking calls, against the real
// sidecar. Prints one JSON object.
//
//   bench_async SIDECAR_EXE CONFIG_TOML [--launches N] [--opens N] [--batches N] [--hung N] [--frame-us U]
//
// Each phase does the same work twice. Blocking: the call's own duration on
// the calling thread (what a game thread waits). Async: a game loop that
// submits, then calls Drain() once per frame (a sleep of --frame-us between
// frames) until the results are in; it records every submit and every Drain
// (the longest single stall the game thread sees) and the wall time until the
// result was delivered.
//   launch:      SidecarProcess::Launch vs LaunchAsync (each process then stopped)
//   open:        OpenSession of a new session vs OpenSessionAsync
//   apply:       ApplyDeltas of a 5-op batch vs ApplyDeltasAsync, one per frame
//   stop_hung:   Stop of a SIGSTOPped sidecar vs StopAsync
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "game_sidecar/call_queue.h"
#include "game_sidecar/sidecar_client.h"

namespace v1 = sidecar::v1;
using namespace game_sidecar;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

std::string Stats(const std::vector<double>& v) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"n\": %zu, \"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}", v.size(), Pct(v, 0.5),
                Pct(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
  return buf;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "bench_async: %s\n", what.c_str());
  std::exit(1);
}

SidecarOptions Options(const char* exe, const char* config) {
  SidecarOptions o;
  o.executable = exe;
  o.args = {"serve", "--config", config};
  o.handshake_timeout = std::chrono::seconds(30);
  return o;
}

// Batch i of a new session: on top of revision i (the async ones rely on the queue's order).
v1::ApplyDeltasRequest Batch(const std::string& session, int i) {
  v1::ApplyDeltasRequest req;
  req.set_session_id(session);
  req.set_base_revision(i);
  for (int k = 0; k < 5; ++k) {
    v1::DeltaOp* op = req.add_ops();
    op->mutable_set_scene_fact()->set_key("fact-" + std::to_string(k));
    op->mutable_set_scene_fact()->mutable_value()->set_int_value(i);
  }
  return req;
}

// The game loop's figures for one phase.
struct Loop {
  std::vector<double> submit_ms, drain_ms, delivered_ms;
  std::chrono::microseconds frame;

  template <class F>
  void Submit(F f) {
    auto t0 = Clock::now();
    f();
    submit_ms.push_back(Ms(Clock::now() - t0));
  }
  // Drains once per frame until `done()`.
  template <class Pred>
  void Until(CallQueue& queue, Pred done, Clock::time_point started) {
    while (!done()) {
      auto t0 = Clock::now();
      queue.Drain();
      drain_ms.push_back(Ms(Clock::now() - t0));
      if (done()) break;
      std::this_thread::sleep_for(frame);
    }
    delivered_ms.push_back(Ms(Clock::now() - started));
  }
  std::string Json() const {
    return "{\"submit_ms\": " + Stats(submit_ms) + ", \"drain_ms\": " + Stats(drain_ms) +
           ", \"delivered_ms\": " + Stats(delivered_ms) + "}";
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: bench_async SIDECAR_EXE CONFIG_TOML [--launches N] [--opens N] [--batches N] [--hung N] [--frame-us U]");
  int launches = 5, opens = 20, batches = 300, hung = 3, frame_us = 1000;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--launches")) launches = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--opens")) opens = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--hung")) hung = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--frame-us")) frame_us = std::atoi(argv[i + 1]);
    else Fail(std::string("unknown option ") + argv[i]);
  }
  const SidecarOptions options = Options(argv[1], argv[2]);
  CallQueue queue;
  std::string out = "{";

  // launch
  {
    std::vector<double> blocking;
    Loop loop{{}, {}, {}, std::chrono::microseconds(frame_us)};
    for (int i = 0; i < launches; ++i) {
      LaunchError error;
      auto t0 = Clock::now();
      auto p = SidecarProcess::Launch(options, &error);
      blocking.push_back(Ms(Clock::now() - t0));
      if (!p) Fail(error.ToString());
      p->Stop();

      std::unique_ptr<SidecarProcess> got;
      bool done = false;
      auto started = Clock::now();
      loop.Submit([&] {
        SidecarProcess::LaunchAsync(options, queue, [&](std::unique_ptr<SidecarProcess> q, LaunchError e) {
          if (!q) Fail(e.ToString());
          got = std::move(q);
          done = true;
        });
      });
      loop.Until(queue, [&] { return done; }, started);
      got->Stop();
    }
    out += "\"launch\": {\"blocking_ms\": " + Stats(blocking) + ", \"async\": " + loop.Json() + "}";
  }

  LaunchError error;
  auto process = SidecarProcess::Launch(options, &error);
  if (!process) Fail(error.ToString());
  SidecarClient client(*process);

  // open: every OpenSession makes a new session (the first one on a fresh sidecar is the slow one)
  {
    std::vector<double> blocking;
    Loop loop{{}, {}, {}, std::chrono::microseconds(frame_us)};
    for (int i = 0; i < opens; ++i) {
      v1::OpenSessionRequest open;
      open.set_session_id("blocking-" + std::to_string(i));
      auto t0 = Clock::now();
      Status st = client.OpenSession(open, nullptr);
      blocking.push_back(Ms(Clock::now() - t0));
      if (!st.ok()) Fail(st.ToString());
    }
    for (int i = 0; i < opens; ++i) {
      v1::OpenSessionRequest open;
      open.set_session_id("async-" + std::to_string(i));
      bool done = false;
      auto started = Clock::now();
      loop.Submit([&] {
        client.OpenSessionAsync(queue, open, [&](Status st, v1::OpenSessionResponse) {
          if (!st.ok()) Fail(st.ToString());
          done = true;
        });
      });
      loop.Until(queue, [&] { return done; }, started);
    }
    out += ", \"open\": {\"blocking_ms\": " + Stats(blocking) + ", \"async\": " + loop.Json() + "}";
  }

  // apply: one batch per frame, the game never waiting for an answer
  {
    std::vector<double> blocking;
    for (int i = 0; i < batches; ++i) {
      auto t0 = Clock::now();
      Status st = client.ApplyDeltas(Batch("blocking-0", i), nullptr);
      blocking.push_back(Ms(Clock::now() - t0));
      if (!st.ok()) Fail(st.ToString());
    }
    Loop loop{{}, {}, {}, std::chrono::microseconds(frame_us)};
    int answered = 0;
    auto started = Clock::now();
    for (int i = 0; i < batches; ++i) {
      loop.Submit([&] {
        client.ApplyDeltasAsync(queue, Batch("async-0", i), [&](Status st, v1::ApplyDeltasResponse) {
          if (!st.ok()) Fail(st.ToString());
          ++answered;
        });
      });
      auto t0 = Clock::now();
      queue.Drain();
      loop.drain_ms.push_back(Ms(Clock::now() - t0));
      std::this_thread::sleep_for(loop.frame);
    }
    loop.Until(queue, [&] { return answered == batches; }, started);
    out += ", \"apply\": {\"blocking_ms\": " + Stats(blocking) + ", \"async\": " + loop.Json() + "}";
  }
  process->Stop();

  // stop_hung: SIGSTOP, then stop it
  {
    std::vector<double> blocking;
    Loop loop{{}, {}, {}, std::chrono::microseconds(frame_us)};
    for (int i = 0; i < hung; ++i) {
      auto p = SidecarProcess::Launch(options, &error);
      if (!p) Fail(error.ToString());
      kill(p->pid(), SIGSTOP);
      auto t0 = Clock::now();
      p->Stop();
      blocking.push_back(Ms(Clock::now() - t0));

      auto q = SidecarProcess::Launch(options, &error);
      if (!q) Fail(error.ToString());
      kill(q->pid(), SIGSTOP);
      bool done = false;
      auto started = Clock::now();
      loop.Submit([&] { SidecarProcess::StopAsync(std::move(q), queue, [&](ExitInfo) { done = true; }); });
      loop.Until(queue, [&] { return done; }, started);
    }
    out += ", \"stop_hung\": {\"blocking_ms\": " + Stats(blocking) + ", \"async\": " + loop.Json() + "}";
  }

  double load[3] = {0, 0, 0};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(f);
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, ", \"frame_us\": %d, \"load1\": %.2f}", frame_us, load[0]);
  out += tail;
  std::printf("%s\n", out.c_str());
  return 0;
}
