// bench_client: figures for the C++ client against the real sidecar, printed as
// one JSON object. Baselines in the same run: StreamDeltas against unary
// ApplyDeltas, and launch time against the protocol's 500 ms handshake target.
//
//   bench_client SIDECAR_EXE CONFIG_TOML [--launches N] [--batches N] [--runs N] [--crowd N]
//                [--warmup-seconds S]
//   bench_client clients/cpp/tests/fake_sidecar.sh - --launches N --launcher-only 1
//
// --launcher-only 1 measures the launcher alone: SIDECAR_EXE is the fake sidecar
// script, started with "until-eof" (prints its handshake at once, exits on stdin EOF),
// so launch -> handshake is process spawn + pipes + the handshake read, without the
// real sidecar's start-up.
//
// --crowd N starts N runs at once (one session each, so the sidecar serves up to
// runs.max_concurrent of them in parallel and queues the rest) and reports this
// process's thread count before and at its peak while they are open.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "game_sidecar/sidecar_client.h"

namespace v1 = sidecar::v1;
using namespace game_sidecar;
using Clock = std::chrono::steady_clock;

static double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

static double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

static SidecarOptions Options(const char* exe, const char* config) {
  SidecarOptions o;
  o.executable = exe;
  o.args = {"serve", "--config", config};
  o.handshake_timeout = std::chrono::seconds(30);
  return o;
}

static void Fail(const std::string& what) {
  std::fprintf(stderr, "bench_client: %s\n", what.c_str());
  std::exit(1);
}

// This process's thread count (Linux /proc), -1 when unknown.
static int ThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

static v1::DeltaOp Fact(int i) {
  v1::DeltaOp op;
  op.mutable_set_scene_fact()->set_key("tick");
  op.mutable_set_scene_fact()->mutable_value()->set_int_value(i);
  return op;
}

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: bench_client SIDECAR_EXE CONFIG_TOML [--launches N] [--batches N] [--runs N] [--crowd N]");
  int launches = 5, batches = 500, runs = 5, crowd = 32, launcher_only = 0, warmup_batches = 0;
  double warmup_seconds = 3;
  int64_t rev_after_warmup = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--launches")) launches = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--crowd")) crowd = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--launcher-only")) launcher_only = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--warmup-seconds")) warmup_seconds = std::atof(argv[i + 1]);
  }

  if (launcher_only) {
    std::vector<double> hs_ms, end_ms;
    for (int i = 0; i < launches; ++i) {
      SidecarOptions o;
      o.executable = argv[1];
      o.args = {"until-eof"};
      o.handshake_timeout = std::chrono::seconds(30);
      LaunchError err;
      auto t0 = Clock::now();
      auto p = SidecarProcess::Launch(o, &err);
      auto t1 = Clock::now();
      if (!p) Fail(err.ToString());
      p->Stop();
      hs_ms.push_back(Ms(t1 - t0));
      end_ms.push_back(Ms(Clock::now() - t1));
    }
    std::printf("{\"bench\":\"cpp_launcher\",\"launches\":%d,\"fake_launch_to_handshake_ms_p50\":%.2f,"
                "\"fake_stop_ms_p50\":%.2f}\n",
                launches, Pct(hs_ms, 0.5), Pct(end_ms, 0.5));
    return 0;
  }

  // Launch -> handshake, and Stop (stdin EOF -> reaped).
  std::vector<double> launch_ms, first_call_ms, stop_ms;
  for (int i = 0; i < launches; ++i) {
    LaunchError err;
    auto t0 = Clock::now();
    auto p = SidecarProcess::Launch(Options(argv[1], argv[2]), &err);
    auto t1 = Clock::now();
    if (!p) Fail(err.ToString());
    SidecarClient c(*p);
    if (!c.GetInfo({}, nullptr).ok()) Fail("GetInfo failed");
    auto t2 = Clock::now();
    p->Stop();
    auto t3 = Clock::now();
    launch_ms.push_back(Ms(t1 - t0));
    first_call_ms.push_back(Ms(t2 - t0));
    stop_ms.push_back(Ms(t3 - t2));
  }

  LaunchError err;
  auto p = SidecarProcess::Launch(Options(argv[1], argv[2]), &err);
  if (!p) Fail(err.ToString());
  SidecarClient client(*p);
  v1::OpenSessionRequest open;
  open.set_session_id("bench");
  if (!client.OpenSession(open, nullptr).ok()) Fail("OpenSession failed");

  // Unary ApplyDeltas, one op per batch (the per-tick case).
  // Warm-up, not measured, the same in the C# and Python benches: unary and stream calls
  // for --warmup-seconds, then 1 s of quiet, so no client's measured calls share the CPU
  // with start-up work (the sidecar's background imports, .NET's JIT).
  {
    int64_t wrev = 0;
    auto warm = client.StreamDeltas();
    const auto until = Clock::now() + std::chrono::duration<double>(warmup_seconds);
    for (int i = 0; Clock::now() < until; ++i) {
      v1::ApplyDeltasRequest req;
      req.set_session_id("bench");
      req.set_base_revision(wrev);
      req.set_delta_id("wu" + std::to_string(i));
      *req.add_ops() = Fact(i);
      v1::ApplyDeltasResponse resp;
      if (!client.ApplyDeltas(req, &resp).ok()) Fail("warm-up ApplyDeltas");
      v1::StreamDeltasRequest sreq;
      sreq.set_session_id("bench");
      sreq.set_base_revision(resp.revision());
      sreq.set_delta_id("ws" + std::to_string(i));
      *sreq.add_ops() = Fact(i);
      v1::StreamDeltasResponse sresp;
      if (!warm->Apply(sreq, &sresp).ok()) Fail("warm-up StreamDeltas");
      wrev = sresp.revision();
      ++warmup_batches;
    }
    if (!warm->Finish().ok()) Fail("warm-up StreamDeltas finish");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rev_after_warmup = wrev;
  }

  // Client CPU per call (this process, all threads): on a shared machine the server
  // runs on the same cores, so a client that burns CPU while it waits slows the server.
  std::vector<double> unary_us;
  int64_t rev = rev_after_warmup;
  const std::clock_t unary_cpu0 = std::clock();
  for (int i = 0; i < batches; ++i) {
    v1::ApplyDeltasRequest req;
    req.set_session_id("bench");
    req.set_base_revision(rev);
    req.set_delta_id("u" + std::to_string(i));
    *req.add_ops() = Fact(i);
    v1::ApplyDeltasResponse resp;
    auto t0 = Clock::now();
    Status st = client.ApplyDeltas(req, &resp);
    unary_us.push_back(Ms(Clock::now() - t0) * 1000);
    if (!st.ok()) Fail("ApplyDeltas: " + st.ToString());
    rev = resp.revision();
  }
  const double unary_cpu_us = (std::clock() - unary_cpu0) * 1e6 / CLOCKS_PER_SEC / std::max(1, batches);

  // The same batches over one StreamDeltas stream, one at a time.
  std::vector<double> stream_us;
  auto stream = client.StreamDeltas();
  const std::clock_t stream_cpu0 = std::clock();
  for (int i = 0; i < batches; ++i) {
    v1::StreamDeltasRequest req;
    req.set_session_id("bench");
    req.set_base_revision(rev);
    req.set_delta_id("s" + std::to_string(i));
    *req.add_ops() = Fact(i);
    v1::StreamDeltasResponse resp;
    auto t0 = Clock::now();
    Status st = stream->Apply(req, &resp);
    stream_us.push_back(Ms(Clock::now() - t0) * 1000);
    if (!st.ok()) Fail("StreamDeltas: " + st.ToString());
    rev = resp.revision();
  }
  const double stream_cpu_us = (std::clock() - stream_cpu0) * 1e6 / CLOCKS_PER_SEC / std::max(1, batches);
  if (!stream->Finish().ok()) Fail("StreamDeltas finish");

  // Scripted runs: the first pays for the model layer's background import.
  std::vector<double> ttft_ms, total_ms;
  double cold_ttft = 0;
  for (int i = 0; i <= runs; ++i) {
    v1::RunRequest req;
    req.set_session_id("bench");
    req.mutable_narrate()->set_text("The gate opens.");
    bool got = false;
    auto t0 = Clock::now();
    Clock::time_point t_first;
    Status st = client.Run(req, [&](const RunUpdate& u) {
      if (u.kind == RunEventKind::kText && !got) {
        got = true;
        t_first = Clock::now();
      }
    });
    auto t1 = Clock::now();
    if (!st.ok() || !got) Fail("Run: " + st.ToString());
    if (i == 0) {
      cold_ttft = Ms(t_first - t0);
    } else {
      ttft_ms.push_back(Ms(t_first - t0));
      total_ms.push_back(Ms(t1 - t0));
    }
  }

  // A crowd: `crowd` runs open at once, one session each.
  for (int i = 0; i < crowd; ++i) {
    v1::OpenSessionRequest crowd_open;
    crowd_open.set_session_id("crowd-" + std::to_string(i));
    if (!client.OpenSession(crowd_open, nullptr).ok()) Fail("OpenSession (crowd) failed");
  }
  const int threads_before = ThreadCount();
  int threads_peak = threads_before;
  std::vector<std::unique_ptr<std::atomic<int64_t>>> first_us;
  for (int i = 0; i < crowd; ++i) first_us.push_back(std::make_unique<std::atomic<int64_t>>(-1));
  std::vector<std::unique_ptr<RunHandle>> handles;
  auto crowd_t0 = Clock::now();
  for (int i = 0; i < crowd; ++i) {
    v1::RunRequest req;
    req.set_session_id("crowd-" + std::to_string(i));
    req.mutable_narrate()->set_text("The gate opens.");
    std::atomic<int64_t>* first = first_us[i].get();
    handles.push_back(client.StartRun(req, [first, crowd_t0](const RunUpdate& u) {
      int64_t none = -1;
      if (u.kind == RunEventKind::kText)
        first->compare_exchange_strong(
            none, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - crowd_t0).count());
    }));
  }
  for (;;) {
    threads_peak = std::max(threads_peak, ThreadCount());
    bool all_done = true;
    for (const auto& h : handles) all_done = all_done && h->Done();
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double crowd_wall_ms = Ms(Clock::now() - crowd_t0);
  std::vector<double> crowd_first_ms;
  for (auto& h : handles) {
    Status st = h->Wait();
    if (!st.ok()) Fail("crowd run: " + st.ToString());
  }
  for (const auto& f : first_us) crowd_first_ms.push_back(static_cast<double>(f->load()) / 1000.0);

  std::printf(
      "{\"bench\":\"cpp_client\",\"launches\":%d,\"launch_to_handshake_ms_p50\":%.1f,"
      "\"launch_to_handshake_ms_max\":%.1f,\"handshake_target_ms\":500,"
      "\"launch_to_first_call_ms_p50\":%.1f,\"stop_ms_p50\":%.1f,"
      "\"batches\":%d,\"warmup_batches\":%d,\"apply_deltas_unary_us_p50\":%.0f,\"apply_deltas_unary_us_p99\":%.0f,"
      "\"stream_deltas_us_p50\":%.0f,\"stream_deltas_us_p99\":%.0f,\"stream_vs_unary_p50\":%.2f,"
      "\"apply_deltas_unary_cpu_us\":%.0f,\"stream_deltas_cpu_us\":%.0f,"
      "\"runs\":%d,\"run_cold_first_token_ms\":%.1f,\"run_first_token_ms_p50\":%.1f,\"run_total_ms_p50\":%.1f,"
      "\"crowd\":%d,\"crowd_threads_before\":%d,\"crowd_threads_peak\":%d,\"crowd_wall_ms\":%.1f,"
      "\"crowd_first_token_ms_p50\":%.1f,\"crowd_first_token_ms_max\":%.1f}\n",
      launches, Pct(launch_ms, 0.5), Pct(launch_ms, 1.0), Pct(first_call_ms, 0.5), Pct(stop_ms, 0.5), batches, warmup_batches,
      Pct(unary_us, 0.5), Pct(unary_us, 0.99), Pct(stream_us, 0.5), Pct(stream_us, 0.99),
      Pct(stream_us, 0.5) / std::max(1.0, Pct(unary_us, 0.5)), unary_cpu_us, stream_cpu_us, runs, cold_ttft, Pct(ttft_ms, 0.5),
      Pct(total_ms, 0.5), crowd, threads_before, threads_peak, crowd_wall_ms, Pct(crowd_first_ms, 0.5),
      Pct(crowd_first_ms, 1.0));
  return 0;
}
