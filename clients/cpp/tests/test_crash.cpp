// When the real sidecar dies or hangs (issue 20, docs/protocol.md §1 "When the
// sidecar exits"): the exit is reported truthfully, calls in flight and new
// ones fail with SIDECAR_GONE, a hung sidecar is declared gone and killed, a
// restart policy relaunches it and tracked sessions resume with the state a
// crash-free reference has, and nothing is left behind.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "crash_support.h"
#include "e2e_support.h"
#include "game_sidecar/tracked_session.h"

using game_sidecar::ExitInfo;
using game_sidecar::ResumedSession;
using game_sidecar::RestartOutcome;
using game_sidecar::RestartPolicy;
using game_sidecar::RunEventKind;
using game_sidecar::SidecarExit;
using game_sidecar::SidecarStatus;
using game_sidecar::Status;
using game_sidecar::TrackedSession;
using testing_support::Alive;
using testing_support::Eventually;
namespace v1 = ::sidecar::v1;

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Dir(const std::string& path) { return path.substr(0, path.rfind('/')); }

using crash::Events;
using crash::Fact;
using crash::kGenerous;
using crash::State;
using crash::StateDir;
using crash::WithRestart;
using crash::WithStateDir;

void ExpectGone(const Status& st, int signal, bool hung) {
  EXPECT_TRUE(st.sidecar_gone()) << st.ToString();
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kUnavailable) << st.ToString();
  EXPECT_EQ(st.reason_code(), v1::ERROR_REASON_SIDECAR_GONE);
  ASSERT_NE(st.sidecar_exit, nullptr) << st.ToString();
  EXPECT_EQ(st.sidecar_exit->signal.value_or(0), signal) << st.sidecar_exit->describe();
  EXPECT_FALSE(st.sidecar_exit->requested);
  EXPECT_EQ(st.sidecar_exit->hung, hung);
  // The real endpoint, never gRPC's "localhost:80".
  EXPECT_NE(st.message.find("unix:/"), std::string::npos) << st.message;
  EXPECT_EQ(st.message.find("localhost:80"), std::string::npos) << st.message;
}

}  // namespace

TEST(SidecarExitRecord, DescribesASignalTruthfully) {
  SidecarExit e;
  e.signal = 9;
  e.stderr_tail = "first\nlast words";
  EXPECT_EQ(e.describe(), "killed by signal 9 (SIGKILL), not requested; last stderr: last words");
  SidecarExit orderly;
  orderly.exit_code = 0;
  orderly.requested = true;
  EXPECT_EQ(orderly.describe(), "exited with code 0, requested");
}

// kill -9 while a run streams and a delta stream waits: both end with the
// typed error carrying the exit; new calls fail at once; the exit is reported
// as a signal the game did not ask for; the socket folder is removed.
TEST(SidecarCrash, KillDuringRunAndDeltaStreamIsSidecarGone) {
  Events events;  // before the process: its callbacks may run until the process is gone
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "crash"));
  std::string socket = s.process->handshake().address;
  int pid = s.process->pid();

  game_sidecar::RunEventQueue queue;
  auto run = s.client->StartRun(e2e::Narrate("crash", "The gate groans. #stall-mid", "slow"), queue.Sink());
  game_sidecar::RunUpdate first;
  ASSERT_TRUE(queue.WaitPop(&first, kGenerous));
  auto stream = s.client->StreamDeltas();
  v1::StreamDeltasRequest batch;
  batch.set_session_id("crash");
  batch.set_base_revision(1);
  batch.set_delta_id("before-kill");
  *batch.add_ops() = Fact("tick", 1);
  ASSERT_TRUE(stream->Apply(batch, nullptr).ok());
  // A reader blocked on the stream when the process dies.
  auto blocked = std::async(std::launch::async, [&] {
    v1::StreamDeltasResponse r;
    EXPECT_FALSE(stream->Read(&r));
    return stream->Finish();
  });

  ASSERT_EQ(kill(pid, SIGKILL), 0);

  ASSERT_EQ(blocked.wait_for(kGenerous), std::future_status::ready);
  ExpectGone(blocked.get(), SIGKILL, false);
  Status run_status;
  ASSERT_TRUE(run->WaitFor(kGenerous, &run_status));
  ExpectGone(run_status, SIGKILL, false);
  // The run's last event is the same typed error.
  game_sidecar::RunUpdate u, last;
  while (queue.TryPop(&u)) last = u;
  EXPECT_EQ(last.kind, RunEventKind::kError);
  EXPECT_TRUE(last.error.sidecar_gone()) << last.error.ToString();

  // New calls fail at once with the same error.
  ExpectGone(s.client->GetInfo({}, nullptr), SIGKILL, false);
  auto late_run = s.client->StartRun(e2e::Narrate("crash", "Too late."), nullptr);
  ExpectGone(late_run->Wait(), SIGKILL, false);
  auto late_stream = s.client->StreamDeltas();
  ExpectGone(late_stream->Apply(batch, nullptr), SIGKILL, false);

  SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(kGenerous, &exit));
  EXPECT_EQ(exit.signal.value_or(0), SIGKILL);
  EXPECT_FALSE(exit.exit_code.has_value());
  EXPECT_FALSE(exit.requested);
  EXPECT_FALSE(exit.hung);
  EXPECT_EQ(exit.pid, pid);
  EXPECT_NE(exit.describe().find("killed by signal 9 (SIGKILL), not requested"), std::string::npos)
      << exit.describe();
  EXPECT_EQ(s.process->status(), SidecarStatus::kFailed);
  {
    std::lock_guard<std::mutex> lock(events.mu);
    ASSERT_EQ(events.exits.size(), 1u);
    EXPECT_EQ(events.exits[0].signal.value_or(0), SIGKILL);
    EXPECT_EQ(events.statuses, std::vector<SidecarStatus>{SidecarStatus::kFailed});
  }
  // Stop afterwards says it was already gone, not that it "exited".
  ExitInfo info = s.process->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kGone);
  EXPECT_EQ(info.term_signal, SIGKILL);
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(Exists(socket));
  EXPECT_FALSE(Exists(Dir(socket))) << "the sidecar's temp folder is left behind";
}

// SIGSTOP: no answer, no exit. The liveness check declares it hung and kills
// it; calls in flight end with SIDECAR_GONE (hung = true).
TEST(SidecarCrash, StoppedSidecarIsDeclaredHungAndKilled) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "hang"));
  std::string socket = s.process->handshake().address;
  int pid = s.process->pid();
  game_sidecar::RunEventQueue queue;
  auto run = s.client->StartRun(e2e::Narrate("hang", "The wind stops. #stall-mid", "slow"), queue.Sink());
  game_sidecar::RunUpdate first;
  ASSERT_TRUE(queue.WaitPop(&first, kGenerous));

  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  // A blocking call made while it hangs ends with the same verdict.
  auto call = std::async(std::launch::async, [&] { return s.client->GetState({}, nullptr); });

  SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(kGenerous, &exit));
  EXPECT_TRUE(exit.hung) << exit.describe();
  EXPECT_EQ(exit.signal.value_or(0), SIGKILL);
  EXPECT_FALSE(exit.requested);
  Status run_status;
  ASSERT_TRUE(run->WaitFor(kGenerous, &run_status));
  ExpectGone(run_status, SIGKILL, true);
  ASSERT_EQ(call.wait_for(kGenerous), std::future_status::ready);
  ExpectGone(call.get(), SIGKILL, true);
  EXPECT_FALSE(Alive(pid));
  EXPECT_TRUE(Eventually([&] { return !Exists(Dir(socket)); }));
}

// Stop of a hung sidecar: it cannot read its stdin EOF nor act on SIGTERM, so
// Stop kills it instead of waiting out the graces (set to minutes here: a
// Stop that waited them would not finish within the generous bound).
TEST(SidecarCrash, StopOfAHungSidecarKillsItWithoutTheGraces) {
  auto options = testing_support::RealOptions();
  options.exit_grace = std::chrono::seconds(120);
  options.terminate_grace = std::chrono::seconds(120);
  options.hang_timeout = std::chrono::seconds(600);  // Stop must not rely on the hang verdict
  auto s = e2e::Launch(options);
  ASSERT_TRUE(s.process);
  int pid = s.process->pid();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  auto stop = std::async(std::launch::async, [&] { return s.process->Stop(); });
  ASSERT_EQ(stop.wait_for(kGenerous), std::future_status::ready) << "Stop waited out its graces";
  ExitInfo info = stop.get();
  EXPECT_EQ(info.how, ExitInfo::How::kKilled);
  EXPECT_EQ(info.term_signal, SIGKILL);
  SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(std::chrono::milliseconds(0), &exit));
  EXPECT_TRUE(exit.requested);
  EXPECT_TRUE(exit.hung);
  EXPECT_EQ(s.process->status(), SidecarStatus::kStopped);
  EXPECT_FALSE(Alive(pid));
}

// With --listen unix:PATH the socket is the game's to place: after a kill the
// client removes the socket file and leaves the game's folder alone.
TEST(SidecarCrash, KilledSidecarsSocketFileIsRemovedFromTheGamesFolder) {
  StateDir folder;  // just a folder of the game's
  auto options = testing_support::RealOptions();
  std::string socket = folder.path + "/game.sock";
  options.args.push_back("--listen");
  options.args.push_back("unix:" + socket);
  auto s = e2e::Launch(options);
  ASSERT_TRUE(s.process);
  ASSERT_EQ(s.process->handshake().address, socket);
  ASSERT_TRUE(Exists(socket));
  ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
  ASSERT_TRUE(s.process->wait_exit(kGenerous));
  EXPECT_FALSE(Exists(socket));
  EXPECT_TRUE(Exists(folder.path));
}

// An orderly stop is reported as requested, with its exit code.
TEST(SidecarCrash, OrderlyStopIsRequestedWithExitCode) {
  Events events;  // before the process: its callbacks may run until the process is gone
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  ExitInfo info = s.process->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kExited);
  SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(std::chrono::milliseconds(0), &exit));
  EXPECT_EQ(exit.exit_code.value_or(-1), 0);
  EXPECT_TRUE(exit.requested);
  EXPECT_FALSE(exit.hung);
  Status st = s.client->GetInfo({}, nullptr);
  EXPECT_TRUE(st.sidecar_gone()) << st.ToString();
  ASSERT_NE(st.sidecar_exit, nullptr);
  EXPECT_TRUE(st.sidecar_exit->requested);
  std::lock_guard<std::mutex> lock(events.mu);
  EXPECT_EQ(events.statuses, std::vector<SidecarStatus>{SidecarStatus::kStopped});
}

// With a restart policy and a state dir: kill -9 twice between batches; the
// same client and TrackedSession go on, and the state equals a reference
// sidecar that got the same batches without a crash.
TEST(SidecarRestart, TrackedSessionResumesWithTheReferenceState) {
  StateDir dir;
  Events events;
  auto s = e2e::Launch(WithStateDir(WithRestart(testing_support::RealOptions()), dir));
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  auto ref = e2e::Launch();
  ASSERT_TRUE(ref.process);

  v1::OpenSessionRequest open;
  open.set_session_id("world");
  Status st;
  auto tracked = TrackedSession::Open(*s.client, open, &st);
  ASSERT_TRUE(tracked) << st.ToString();
  auto reference = TrackedSession::Open(*ref.client, open, &st);
  ASSERT_TRUE(reference) << st.ToString();

  std::set<int> pids = {s.process->pid()};
  std::set<std::string> folders = {Dir(s.process->handshake().address)};
  int value = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5; ++i, ++value) {
      std::vector<v1::DeltaOp> ops = {Fact("k" + std::to_string(value), value), Fact("last", value)};
      st = tracked->Apply(ops);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_TRUE(reference->Apply(ops).ok());
    }
    if (round == 2) break;
    ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
    ASSERT_TRUE(events.WaitRestarts(round + 1));
    RestartOutcome outcome;
    {
      std::lock_guard<std::mutex> lock(events.mu);
      outcome = events.restarts.back();
    }
    ASSERT_TRUE(outcome.restarted) << outcome.error;
    EXPECT_EQ(outcome.exit.signal.value_or(0), SIGKILL);
    EXPECT_FALSE(outcome.sessions_lost);
    ASSERT_EQ(outcome.sessions.size(), 1u);
    EXPECT_TRUE(outcome.sessions[0].resumed);
    EXPECT_EQ(outcome.sessions[0].revision, reference->revision());
    EXPECT_EQ(s.process->status(), SidecarStatus::kReady);
    pids.insert(s.process->pid());
    folders.insert(Dir(s.process->handshake().address));
  }
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_EQ(tracked->revision(), reference->revision());
  v1::GetStateResponse got = State(*s.client, "world"), want = State(*ref.client, "world");
  EXPECT_EQ(got.revision(), want.revision());
  EXPECT_EQ(got.snapshot().DebugString(), want.snapshot().DebugString());
  {
    std::lock_guard<std::mutex> lock(events.mu);
    EXPECT_EQ(events.statuses, (std::vector<SidecarStatus>{SidecarStatus::kRestarting, SidecarStatus::kReady,
                                                           SidecarStatus::kRestarting, SidecarStatus::kReady}));
    EXPECT_EQ(events.exits.size(), 2u);
  }
  // No process and no temp folder left from any of the three.
  s.process->Stop();
  for (int pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
  for (const auto& f : folders) EXPECT_FALSE(Exists(f)) << f;
}

// The unacknowledged batch, both ways. The sidecar is stopped (SIGSTOP) so a
// batch gets no answer; the hang verdict kills it and the restart resends the
// batch under its delta ID.
//  - it had been applied before (another client applied it with that ID, as if
//    only the acknowledgement was lost): the sidecar replays it, applied once;
//  - it had not: it is applied by the resend.
TEST(SidecarRestart, UnacknowledgedBatchIsAppliedExactlyOnce) {
  StateDir dir;
  Events events;
  auto s = e2e::Launch(WithStateDir(WithRestart(testing_support::RealOptions()), dir));
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  v1::OpenSessionRequest open;
  open.set_session_id("acks");
  Status st;
  auto tracked = TrackedSession::Open(*s.client, open, &st);
  ASSERT_TRUE(tracked) << st.ToString();
  ASSERT_TRUE(tracked->Apply({Fact("base", 1)}).ok());
  ASSERT_EQ(tracked->revision(), 1);

  // 1. Applied before the hang, acknowledgement never seen by the tracker.
  v1::ApplyDeltasRequest raw;
  raw.set_session_id("acks");
  raw.set_base_revision(1);
  raw.set_delta_id("lost-ack");
  *raw.add_ops() = Fact("counted", 1);
  ASSERT_TRUE(s.client->ApplyDeltas(raw, nullptr).ok());
  ASSERT_EQ(kill(s.process->pid(), SIGSTOP), 0);
  st = tracked->Apply({Fact("counted", 1)}, nullptr, "lost-ack");
  EXPECT_TRUE(st.sidecar_gone()) << st.ToString();
  EXPECT_TRUE(st.sidecar_will_restart) << st.ToString();  // the policy relaunches it
  EXPECT_EQ(st.metadata["will_restart"], "true");
  ASSERT_TRUE(events.WaitRestarts(1));
  {
    std::lock_guard<std::mutex> lock(events.mu);
    const RestartOutcome& o = events.restarts.back();
    ASSERT_TRUE(o.restarted) << o.error;
    EXPECT_TRUE(o.exit.hung);
    ASSERT_EQ(o.sessions.size(), 1u);
    EXPECT_EQ(o.sessions[0].pending_delta_id, "lost-ack");
    EXPECT_EQ(o.sessions[0].pending, ResumedSession::Pending::kReplayed) << game_sidecar::PendingName(o.sessions[0].pending);
  }
  EXPECT_EQ(tracked->revision(), 2);  // applied once, not twice
  EXPECT_EQ(State(*s.client, "acks").revision(), 2);
  EXPECT_TRUE(tracked->pending_delta_id().empty());

  // 2. Never applied: sent to a stopped sidecar, resent after the restart.
  ASSERT_EQ(kill(s.process->pid(), SIGSTOP), 0);
  st = tracked->Apply({Fact("late", 7)});  // the tracker names it
  EXPECT_TRUE(st.sidecar_gone()) << st.ToString();
  ASSERT_TRUE(events.WaitRestarts(2));
  std::string id;
  {
    std::lock_guard<std::mutex> lock(events.mu);
    const RestartOutcome& o = events.restarts.back();
    ASSERT_TRUE(o.restarted) << o.error;
    ASSERT_EQ(o.sessions.size(), 1u);
    id = o.sessions[0].pending_delta_id;
    EXPECT_EQ(o.sessions[0].pending, ResumedSession::Pending::kAppliedNow) << game_sidecar::PendingName(o.sessions[0].pending);
  }
  EXPECT_EQ(id.rfind("acks-", 0), 0u) << id;  // "<session>-<random>-<n>"
  EXPECT_EQ(tracked->revision(), 3);
  v1::GetStateResponse state = State(*s.client, "acks");
  EXPECT_EQ(state.revision(), 3);
  bool late = false;
  for (const auto& f : state.snapshot().scene_facts()) late = late || (f.key() == "late" && f.value().int_value() == 7);
  EXPECT_TRUE(late) << state.snapshot().DebugString();
}

// The policy allows one restart: the second kill is final (status failed,
// wait_exit gives that last exit, the outcome says it was not restarted).
TEST(SidecarRestart, ExhaustedPolicyFailsWithTheLastExit) {
  Events events;
  auto s = e2e::Launch(WithRestart(testing_support::RealOptions(), 1));
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  int first = s.process->pid();
  ASSERT_EQ(kill(first, SIGKILL), 0);
  ASSERT_TRUE(events.WaitRestarts(1));
  int second = s.process->pid();
  ASSERT_NE(second, first);
  ASSERT_TRUE(s.client->GetInfo({}, nullptr).ok());  // the same client reaches the new process
  std::string folder = Dir(s.process->handshake().address);
  ASSERT_EQ(kill(second, SIGKILL), 0);
  SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(kGenerous, &exit));
  EXPECT_EQ(exit.pid, second);
  EXPECT_EQ(exit.signal.value_or(0), SIGKILL);
  EXPECT_EQ(s.process->status(), SidecarStatus::kFailed);
  ASSERT_TRUE(events.WaitRestarts(2));
  std::lock_guard<std::mutex> lock(events.mu);
  EXPECT_FALSE(events.restarts.back().restarted);
  EXPECT_EQ(events.restarts.back().exit.pid, second);
  EXPECT_EQ(events.statuses, (std::vector<SidecarStatus>{SidecarStatus::kRestarting, SidecarStatus::kReady,
                                                         SidecarStatus::kFailed}));
  Status st = s.client->GetInfo({}, nullptr);
  EXPECT_TRUE(st.sidecar_gone()) << st.ToString();
  EXPECT_FALSE(st.sidecar_will_restart);  // the policy is used up: it stays gone
  EXPECT_EQ(st.metadata["will_restart"], "false");
  EXPECT_EQ(st.message.find("restarting"), std::string::npos) << st.message;
  EXPECT_FALSE(Alive(first));
  EXPECT_FALSE(Alive(second));
  EXPECT_FALSE(Exists(folder));
}

// Without --state-dir the restart cannot keep sessions: the outcome says they
// were lost, and ReplaceState through the tracker resyncs them.
TEST(SidecarRestart, WithoutStateDirSessionsAreLostThenReplaceStateResyncs) {
  Events events;
  auto s = e2e::Launch(WithRestart(testing_support::RealOptions()));
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  v1::OpenSessionRequest open;
  open.set_session_id("volatile");
  Status st;
  auto tracked = TrackedSession::Open(*s.client, open, &st);
  ASSERT_TRUE(tracked) << st.ToString();
  ASSERT_TRUE(tracked->Apply({e2e::Upsert("level/gate", v1::ENTITY_KIND_LOCATION, "the north gate"),
                              Fact("weather", 3)}).ok());
  v1::GetStateResponse before = State(*s.client, "volatile");

  ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
  ASSERT_TRUE(events.WaitRestarts(1));
  {
    std::lock_guard<std::mutex> lock(events.mu);
    const RestartOutcome& o = events.restarts.back();
    ASSERT_TRUE(o.restarted) << o.error;
    EXPECT_TRUE(o.sessions_lost);
    EXPECT_EQ(o.lost_sessions, std::vector<std::string>{"volatile"});
    ASSERT_EQ(o.sessions.size(), 1u);
    EXPECT_FALSE(o.sessions[0].resumed);
  }
  EXPECT_EQ(State(*s.client, "volatile").snapshot().scene_facts_size(), 0);  // re-opened empty
  EXPECT_TRUE(tracked->lost());
  st = tracked->Apply({Fact("weather", 9)});  // refused until the resync
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kFailedPrecondition) << st.ToString();

  v1::ReplaceStateRequest resync;
  *resync.mutable_snapshot() = before.snapshot();
  resync.set_revision(before.revision());
  st = tracked->ReplaceState(resync);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(tracked->revision(), before.revision());
  EXPECT_FALSE(tracked->lost());
  v1::GetStateResponse after = State(*s.client, "volatile");
  EXPECT_EQ(after.snapshot().DebugString(), before.snapshot().DebugString());
  ASSERT_TRUE(tracked->Apply({Fact("weather", 4)}).ok());  // and play goes on
  EXPECT_EQ(tracked->revision(), before.revision() + 1);
}
