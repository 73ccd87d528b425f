// crash_driver: the C++ client's driver for scripts/bench/bench_crash_recovery.py
// (issue 20; the contract is in that script's docstring). Launches the real
// sidecar with a restart policy and a --state-dir, applies batches through a
// TrackedSession from a "game" thread and narrates from another, kills its
// own sidecar (kill -9) at random moments, then stops it (SIGSTOP) to time the
// hang verdict. At the end the sidecar's GetState is compared with a fresh
// sidecar that got the acknowledged batches without crashes.
//
//   crash_driver --sidecar EXE [--kills 50] [--hangs 10] [--seed 20]
//
// Prints one JSON line: {"client":"cpp","kills","acked_ops_lost",
// "ops_applied_twice","recover_ms_p50","recover_ms_max","hang_detect_ms_max",
// "rss_mb_growth","fds_growth", and ready_ms_p50, gone_ms_p50/max, state_matches_reference,
// acked_batches, hangs, and (issue 34: the game writes every 2 ms through the
// restarts) writes_lost, writes_applied_twice, write_blocked_ms_max(_hangs),
// writes_kept, writes_refused}; progress goes to stderr.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "game_sidecar/sidecar_client.h"
#include "game_sidecar/tracked_session.h"

namespace v1 = sidecar::v1;
using namespace game_sidecar;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kConfig[] =
    "default_profile = \"fake\"\n[profiles.fake]\nmodel = \"scripted/bench\"\nmax_retries = 0\n"
    "[profiles.fake.script]\nchunk_delay_ms = 5.0\n[state]\nmax_events = 100000\n";
constexpr int kOpsPerBatch = 2;
constexpr int kWarmKills = 5;  // footprint baseline after this many kills (gRPC's pools are warm)

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "crash_driver: %s\n", what.c_str());
  std::exit(1);
}

// (RSS in MB, open fds) of this process.
std::pair<double, int> Footprint() {
  double rss = 0;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024.0;
  int fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++fds;
    closedir(d);
  }
  return {rss, fds - 1};  // minus the DIR's own descriptor
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Batch k (the one making revision k): entity e<k> with field k = k, and the event "tick <k>".
std::vector<v1::DeltaOp> Batch(int64_t k) {
  std::vector<v1::DeltaOp> ops(2);
  auto* entity = ops[0].mutable_upsert_entity()->mutable_entity();
  entity->set_id("e" + std::to_string(k));
  (*entity->mutable_fields())["k"].mutable_value()->set_int_value(k);
  auto* event = ops[1].mutable_record_event()->mutable_event();
  event->set_text("tick " + std::to_string(k));
  event->add_entity_ids("e" + std::to_string(k));
  return ops;
}

SidecarOptions Options(const std::string& exe, const std::string& config) {
  SidecarOptions o;
  o.executable = exe;
  o.args = {"serve", "--config", config};
  o.handshake_timeout = std::chrono::seconds(60);
  return o;
}

struct Driver {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = true;
  bool done = false;
  // One flag per batch number (batch k makes revision k), allocated up front: the
  // driver's own bookkeeping must not grow the footprint that is measured.
  std::vector<uint8_t> acked = std::vector<uint8_t>(2'000'000);
  size_t acked_count = 0;
  // Under mu: batch k is in the session; by a process started after the last
  // kill, it is the kill's recovery (a kept batch that landed always is).
  void Ack(int64_t k, bool by_a_new_process) {
    if (k <= 0 || static_cast<size_t>(k) >= acked.size()) Fail("batch number out of range");
    acked_count += acked[k] ? 0 : 1;
    acked[k] = 1;
    if (by_a_new_process && !recovered) {
      recover_ms.push_back(Ms(Clock::now() - killed_at));
      recovered = true;
    }
    cv.notify_all();
  }
  uint64_t kept = 0, landed = 0, refused = 0;
  double blocked_ms = 0, blocked_hang_ms = 0;
  bool hanging = false;
  int killed_pid = 0;
  Clock::time_point killed_at{};
  bool recovered = true;
  Clock::time_point ready_at{};  // the last change to kReady
  uint64_t acks = 0;
  std::vector<double> recover_ms, gone_ms, ready_ms;
  std::vector<Clock::time_point> hung_exits;
  Clock::time_point exit_at{};   // the last exit of any process
  std::string last_error;

  template <class Pred>
  bool WaitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, limit, pred);
  }
  void WaitReady() { WaitFor([&] { return ready || done; }); }
  // READY with a process started after the last exit (on_exit comes before
  // the restart's status change, so a plain READY may still be the dead one's).
  void WaitRestarted() { WaitFor([&] { return (ready && ready_at > exit_at) || done; }); }
};

}  // namespace

int main(int argc, char** argv) {
  std::string exe;
  int kills = 50, hangs = 10;
  unsigned seed = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Fail("missing value for " + a);
    std::string v = argv[++i];
    if (a == "--sidecar") exe = v;
    else if (a == "--kills") kills = std::atoi(v.c_str());
    else if (a == "--hangs") hangs = std::atoi(v.c_str());
    else if (a == "--seed") seed = static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10));
    else Fail("unknown argument " + a + " (usage: crash_driver --sidecar EXE --kills N --hangs N --seed S)");
  }
  if (exe.empty()) Fail("--sidecar EXE is required");
  std::mt19937 rng(seed);
  char tmpl[] = "/tmp/gs-crash-driver-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) Fail("mkdtemp failed");
  std::string work = tmpl, config = work + "/sidecar.toml";
  std::ofstream(config) << kConfig;

  SidecarOptions options = Options(exe, config);
  options.args.push_back("--state-dir");
  options.args.push_back(work + "/state");
  RestartPolicy policy;  // every kill allowed, the backoff held at its initial 250 ms
  policy.max_restarts = 1000;
  policy.window = std::chrono::seconds(3600);
  policy.backoff_initial = policy.backoff_max = std::chrono::milliseconds(250);
  options.restart = policy;

  Driver d;
  LaunchError error;
  auto sidecar = SidecarProcess::Launch(options, &error);
  if (!sidecar) Fail(error.ToString());
  sidecar->on_status([&](SidecarStatus s) {
    std::lock_guard<std::mutex> lock(d.mu);
    d.ready = s == SidecarStatus::kReady;
    if (d.ready) d.ready_at = Clock::now();
    d.cv.notify_all();
  });
  sidecar->on_exit([&](const SidecarExit& e) {
    std::fprintf(stderr, "exit of pid %lld: %s\n", static_cast<long long>(e.pid), e.describe().c_str());
    std::lock_guard<std::mutex> lock(d.mu);
    d.exit_at = Clock::now();
    if (!e.hung) return;
    d.hung_exits.push_back(Clock::now());
    d.cv.notify_all();
  });
  SidecarClient client(*sidecar);
  v1::OpenSessionRequest open;
  open.set_session_id("bench");
  Status st;
  auto tracked = TrackedSession::Open(client, open, &st);
  if (!tracked) Fail("track: " + st.ToString());
  // A kept batch (WRITE_KEPT) that landed: the one in flight at the kill, or one
  // written while the sidecar was gone. "bench-<k>" names batch k.
  tracked->on_pending([&](const ResumedSession& r) {
    if (r.pending != ResumedSession::Pending::kReplayed && r.pending != ResumedSession::Pending::kAppliedNow) return;
    std::lock_guard<std::mutex> lock(d.mu);
    d.Ack(std::strtoll(r.pending_delta_id.c_str() + 6, nullptr, 10), true);
    ++d.landed;
  });

  // The game writes batch after batch, every 2 ms, through the restarts: at
  // WRITE_KEPT it carries on (the tracker sends it), at WRITE_NOT_APPLIED it
  // writes the same batch again once ready; it never resends a batch itself.
  std::thread game([&] {
    for (int64_t k = 1;;) {
      int pid = sidecar->pid();
      {
        std::lock_guard<std::mutex> lock(d.mu);
        if (d.done) return;
      }
      v1::ApplyDeltasResponse reply;
      Clock::time_point started = Clock::now();
      Status s = tracked->Apply(Batch(k), &reply, "bench-" + std::to_string(k));
      std::unique_lock<std::mutex> lock(d.mu);
      double blocked = Ms(Clock::now() - started);
      double& worst = d.hanging ? d.blocked_hang_ms : d.blocked_ms;
      worst = std::max(worst, blocked);
      if (s.ok()) {
        d.Ack(k++, pid != d.killed_pid);
        ++d.acks;
      } else if (s.write_kept()) {
        ++k;
        ++d.kept;
        if (!d.recovered && d.gone_ms.size() < d.recover_ms.size() + 1)
          d.gone_ms.push_back(Ms(Clock::now() - d.killed_at));
      } else if (s.write_not_applied()) {
        ++d.refused;  // the same batch again, once it can be
        lock.unlock();
        d.WaitReady();
        continue;
      } else {
        d.last_error = s.ToString();  // the contract has no other outcome under this policy
        lock.unlock();
        Fail("apply: " + s.ToString());
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::thread narrator([&] {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(d.mu);
        if (d.done) return;
      }
      v1::RunRequest run;
      run.set_session_id("bench");
      run.mutable_narrate()->set_text("The bell rings.");
      if (client.Run(run, nullptr).sidecar_gone()) d.WaitReady();
    }
  });

  auto pause = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 500)(rng))); };
  auto baseline = Footprint();
  std::vector<double> hang_ms;
  // RSS after each kill from the baseline on: the orchestrator's trend (a leak is a slope;
  // two readings alone also catch malloc's arenas moving). Reserved: no growth of its own.
  std::vector<double> rss_samples;
  rss_samples.reserve(static_cast<size_t>(kills) + 1);
  for (int n = 0; n < kills; ++n) {
    d.WaitRestarted();
    pause();
    {
      std::lock_guard<std::mutex> lock(d.mu);
      d.recovered = false;
      d.killed_pid = sidecar->pid();
      d.killed_at = Clock::now();
    }
    kill(d.killed_pid, SIGKILL);
    // Kept batches land before READY: wait for both.
    if (!d.WaitFor([&] { return d.recovered && d.ready_at > d.killed_at; }))
      Fail("no batch acknowledged within 60 s of a kill: " + d.last_error);
    {
      std::lock_guard<std::mutex> lock(d.mu);
      d.ready_ms.push_back(Ms(d.ready_at - d.killed_at));
    }
    if (n + 1 == kWarmKills) baseline = Footprint();
    if (n + 1 >= kWarmKills) rss_samples.push_back(Footprint().first);
    std::fprintf(stderr, "kill %d: ready again after %.0f ms, first batch acknowledged after %.0f ms\n", n + 1,
                 d.ready_ms.back(), d.recover_ms.back());
  }
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.hanging = true;
  }
  for (int n = 0; n < hangs; ++n) {
    d.WaitRestarted();
    pause();
    size_t before;
    {
      std::lock_guard<std::mutex> lock(d.mu);
      before = d.hung_exits.size();
    }
    Clock::time_point started = Clock::now();
    if (kill(sidecar->pid(), SIGSTOP) != 0) Fail("SIGSTOP: no such process");
    if (!d.WaitFor([&] { return d.hung_exits.size() > before; })) Fail("a stopped sidecar was not declared hung");
    hang_ms.push_back(Ms(d.hung_exits.back() - started));
    std::fprintf(stderr, "hang %d: declared hung in %.0f ms\n", n + 1, hang_ms.back());
  }
  d.WaitRestarted();
  uint64_t acks = d.acks;
  if (!d.WaitFor([&] { return d.acks > acks; })) Fail("no batch on the last process");  // one more batch
  auto end = Footprint();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.done = true;
    d.cv.notify_all();
  }
  game.join();
  narrator.join();

  v1::GetStateRequest get;
  get.set_session_id("bench");
  v1::GetStateResponse state;
  st = client.GetState(get, &state);
  if (!st.ok()) Fail("GetState: " + st.ToString());
  sidecar->Stop();

  // The reference: batches 1..R in a fresh sidecar that never crashed.
  auto fresh = SidecarProcess::Launch(Options(exe, config), &error);
  if (!fresh) Fail(error.ToString());
  SidecarClient ref(*fresh);
  if (!(st = ref.OpenSession(open, nullptr)).ok()) Fail("reference open: " + st.ToString());
  for (int64_t k = 1; k <= state.revision(); ++k) {
    v1::ApplyDeltasRequest req;
    req.set_session_id("bench");
    req.set_base_revision(k - 1);
    for (auto& op : Batch(k)) *req.add_ops() = op;
    if (!(st = ref.ApplyDeltas(req, nullptr)).ok()) Fail("reference apply: " + st.ToString());
  }
  v1::GetStateResponse reference;
  if (!(st = ref.GetState(get, &reference)).ok()) Fail("reference GetState: " + st.ToString());
  fresh->Stop();

  std::map<std::string, int64_t> entities;
  for (const auto& e : state.snapshot().entities()) {
    auto it = e.fields().find("k");
    entities[e.id()] = it == e.fields().end() ? -1 : it->second.value().int_value();
  }
  int64_t lost = 0, twice = 0;
  for (int64_t k = 1; k < static_cast<int64_t>(d.acked.size()); ++k) {
    if (!d.acked[k]) continue;
    auto it = entities.find("e" + std::to_string(k));
    if (it == entities.end() || it->second != k) ++lost;
  }
  std::map<std::string, int> ticks;
  for (const auto& e : state.snapshot().events()) ++ticks[e.text()];
  for (const auto& kv : ticks) twice += kv.second > 1 ? kv.second - 1 : 0;
  bool matches = state.revision() == reference.revision() &&
                 state.snapshot().SerializeAsString() == reference.snapshot().SerializeAsString();
  std::system(("rm -rf '" + work + "'").c_str());

  std::string samples;
  for (double v : rss_samples) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.2f", samples.empty() ? "" : ", ", v);
    samples += buf;
  }
  std::printf(
      "{\"client\": \"cpp\", \"kills\": %zu, \"acked_ops_lost\": %lld, \"ops_applied_twice\": %lld, "
      "\"recover_ms_p50\": %.1f, \"recover_ms_max\": %.1f, \"hang_detect_ms_max\": %.1f, "
      "\"rss_mb_growth\": %.2f, \"fds_growth\": %d, \"ready_ms_p50\": %.1f, \"gone_ms_p50\": %.1f, \"gone_ms_max\": %.1f, "
      "\"state_matches_reference\": %s, \"acked_batches\": %zu, \"hangs\": %zu, \"rss_mb_samples\": [%s], "
      "\"writes_lost\": %lld, \"writes_applied_twice\": %lld, \"write_blocked_ms_max\": %.1f, "
      "\"write_blocked_ms_max_hangs\": %.1f, \"writes_kept\": %llu, \"writes_refused\": %llu}\n",
      d.recover_ms.size(), static_cast<long long>(lost * kOpsPerBatch), static_cast<long long>(twice * kOpsPerBatch),
      Median(d.recover_ms), d.recover_ms.empty() ? 0.0 : *std::max_element(d.recover_ms.begin(), d.recover_ms.end()),
      hang_ms.empty() ? 0.0 : *std::max_element(hang_ms.begin(), hang_ms.end()), end.first - baseline.first,
      end.second - baseline.second, Median(d.ready_ms), Median(d.gone_ms),
      d.gone_ms.empty() ? 0.0 : *std::max_element(d.gone_ms.begin(), d.gone_ms.end()), matches ? "true" : "false",
      d.acked_count, hang_ms.size(), samples.c_str(),
      static_cast<long long>(lost + static_cast<int64_t>(d.kept - d.landed)), static_cast<long long>(twice),
      d.blocked_ms, d.blocked_hang_ms, static_cast<unsigned long long>(d.kept),
      static_cast<unsigned long long>(d.refused));
  std::fflush(stdout);
  return 0;
}
