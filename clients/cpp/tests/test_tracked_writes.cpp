// Issue 34: a TrackedSession keeps what the game writes across a restart of the
// real sidecar (killed with SIGKILL), with the contract of docs/protocol.md §1,
// "Tracked writes across a restart": each write is acknowledged, kept
// (WRITE_KEPT: the session sends it and reports it to on_pending), or not
// applied (WRITE_NOT_APPLIED: the game decides). Never dropped in silence,
// never applied twice, never reordered; status() never reads kReady once a
// call has said the sidecar is gone.
#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <csignal>
#include <map>
#include <thread>

#include "crash_support.h"
#include "game_sidecar/tracked_session.h"

using crash::Events;
using crash::Fact;
using crash::kGenerous;
using crash::State;
using crash::StateDir;
using crash::WithStateDir;
using game_sidecar::ResumedSession;
using game_sidecar::RestartPolicy;
using game_sidecar::SidecarStatus;
using game_sidecar::Status;
using game_sidecar::StatusCode;
using game_sidecar::TrackedSession;
using testing_support::Eventually;
namespace v1 = ::sidecar::v1;

namespace {

// A restart slow enough to write into before it is ready.
game_sidecar::SidecarOptions Slow(game_sidecar::SidecarOptions o, int max_restarts = 10) {
  RestartPolicy policy;
  policy.max_restarts = max_restarts;
  policy.backoff_initial = std::chrono::milliseconds(400);
  o.restart = policy;
  return o;
}

std::unique_ptr<TrackedSession> Track(game_sidecar::SidecarClient& client, const std::string& id) {
  v1::OpenSessionRequest open;
  open.set_session_id(id);
  Status st;
  auto tracked = TrackedSession::Open(client, open, &st);
  EXPECT_TRUE(tracked) << st.ToString();
  return tracked;
}

// What on_pending reported, from whichever thread settled it.
struct Settled {
  std::mutex mu;
  std::vector<ResumedSession> all;
  void Watch(TrackedSession& tracked) {
    tracked.on_pending([this](const ResumedSession& s) {
      std::lock_guard<std::mutex> lock(mu);
      all.push_back(s);
    });
  }
  std::vector<std::string> Ids(ResumedSession::Pending outcome) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> ids;
    for (auto& s : all)
      if (s.pending == outcome) ids.push_back(s.pending_delta_id);
    return ids;
  }
};

bool HasFact(const v1::GetStateResponse& state, const std::string& key) {
  for (const auto& f : state.snapshot().scene_facts())
    if (f.key() == key) return true;
  return false;
}

// A sidecar with a --state-dir and a restart policy (Slow, or the quick one),
// what its process reports, and session "g" tracked.
struct Restartable {
  StateDir dir;
  Events events;
  e2e::Sidecar s;
  std::unique_ptr<TrackedSession> tracked;
  explicit Restartable(bool slow = true) {
    game_sidecar::SidecarOptions options = testing_support::RealOptions();
    s = e2e::Launch(WithStateDir(slow ? Slow(options) : crash::WithRestart(options, 10), dir));
    if (!s.process) return;
    events.Watch(*s.process);
    tracked = Track(*s.client, "g");
  }
  bool ok() const { return s.process && tracked; }
};

void KillAndWaitDown(game_sidecar::SidecarProcess& p) {
  ASSERT_EQ(kill(p.pid(), SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return p.status() != SidecarStatus::kReady; }, kGenerous));
}

}  // namespace

TEST(TrackedWrites, WritesMadeWhileTheSidecarRestartsAreKeptAndLandOnceInOrder) {
  Restartable r;
  ASSERT_TRUE(r.ok());
  auto& s = r.s;
  auto& events = r.events;
  auto& tracked = r.tracked;
  Settled settled;
  settled.Watch(*tracked);
  ASSERT_TRUE(tracked->Apply({Fact("k1", 1)}).ok());
  KillAndWaitDown(*s.process);
  for (int k = 2; k <= 4; ++k) {
    Status st = tracked->Apply({Fact("k" + std::to_string(k), k)}, nullptr, "b" + std::to_string(k));
    EXPECT_TRUE(st.write_kept()) << st.ToString();
    EXPECT_TRUE(st.sidecar_gone() && st.sidecar_will_restart) << st.ToString();
    EXPECT_FALSE(st.retryable()) << "the tracked session sends it: never again by the game";
    EXPECT_EQ(st.reason_code(), v1::ERROR_REASON_WRITE_KEPT);
    ASSERT_NE(st.sidecar_exit, nullptr);
    EXPECT_EQ(st.sidecar_exit->signal.value_or(0), SIGKILL);
    EXPECT_NE(st.message.find("do not send it again"), std::string::npos) << st.message;
  }
  EXPECT_EQ(tracked->held_count(), 3u);
  EXPECT_EQ(tracked->revision(), 1);
  ASSERT_TRUE(events.WaitRestarts(1));
  EXPECT_EQ(settled.Ids(ResumedSession::Pending::kAppliedNow), (std::vector<std::string>{"b2", "b3", "b4"}));
  {
    std::lock_guard<std::mutex> lock(events.mu);
    ASSERT_EQ(events.restarts.back().sessions.size(), 1u);
    const auto& held = events.restarts.back().sessions[0].held;
    ASSERT_EQ(held.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(held[i].delta_id, "b" + std::to_string(i + 2));
      EXPECT_EQ(held[i].revision, i + 2);
    }
  }
  EXPECT_EQ(tracked->held_count(), 0u);
  EXPECT_EQ(tracked->revision(), 4);
  ASSERT_TRUE(tracked->Apply({Fact("k5", 5)}).ok());
  v1::GetStateResponse state = State(*s.client, "g");
  EXPECT_EQ(state.revision(), 5);
  for (int k = 1; k <= 5; ++k) EXPECT_TRUE(HasFact(state, "k" + std::to_string(k))) << k;
}

// The game of the held-out drill: it writes every 2 ms from its own thread and
// carries on at WRITE_KEPT, through three kills.
TEST(TrackedWrites, ABurstOfWritesAcrossKillsLosesNothingAndDoublesNothing) {
  Restartable r(false);
  ASSERT_TRUE(r.ok());
  auto& s = r.s;
  auto& events = r.events;
  auto& tracked = r.tracked;
  std::atomic<bool> stop{false};
  std::atomic<int> written{0}, kept{0}, wrong{0};
  std::thread game([&] {
    int k = 0;
    while (!stop.load()) {
      ++k;
      // Facts by k modulo 512 (a session holds 1,024): the last 512 writes name each key last.
      Status st = tracked->Apply({Fact("k" + std::to_string(k % 512), k)}, nullptr, "b" + std::to_string(k));
      if (st.write_not_applied()) {  // the held queue is full: write it again later
        --k;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (st.write_kept()) ++kept;
      else if (!st.ok()) ++wrong;
      written = k;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (size_t restart = 1; restart <= 3; ++restart) {
    ASSERT_TRUE(Eventually([&] { return tracked->revision() >= static_cast<int64_t>(20 * restart); }, kGenerous));
    ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
    ASSERT_TRUE(events.WaitRestarts(restart));
  }
  ASSERT_TRUE(Eventually([&] { return tracked->revision() >= 80; }, kGenerous));
  stop = true;
  game.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(kept.load(), 0) << "some writes met a restart";
  ASSERT_TRUE(Eventually([&] { return tracked->held_count() == 0 && tracked->pending_delta_id().empty(); },
                         kGenerous));
  v1::GetStateResponse state = State(*s.client, "g");
  EXPECT_EQ(state.revision(), written.load()) << "each write applied exactly once";
  EXPECT_EQ(tracked->revision(), written.load());
  // In the order written: each key holds the last write that named it.
  std::map<std::string, int64_t> facts;
  for (const auto& f : state.snapshot().scene_facts()) facts[f.key()] = f.value().int_value();
  int out_of_order = 0;
  for (int k = std::max(1, written.load() - 511); k <= written.load(); ++k)
    out_of_order += facts["k" + std::to_string(k % 512)] == k ? 0 : 1;
  EXPECT_EQ(out_of_order, 0);
}

TEST(TrackedWrites, TheHeldQueueIsBoundedAndRefusesPastItWithoutDroppingTheRest) {
  Restartable r;
  ASSERT_TRUE(r.ok());
  auto& s = r.s;
  auto& events = r.events;
  auto& tracked = r.tracked;
  tracked->set_max_held(2);
  KillAndWaitDown(*s.process);
  EXPECT_TRUE(tracked->Apply({Fact("a", 1)}, nullptr, "a").write_kept());
  EXPECT_TRUE(tracked->Apply({Fact("b", 2)}, nullptr, "b").write_kept());
  Status refused = tracked->Apply({Fact("c", 3)}, nullptr, "c");
  EXPECT_TRUE(refused.write_not_applied()) << refused.ToString();
  EXPECT_FALSE(refused.sidecar_gone()) << "never mistaken for a kept write";
  EXPECT_EQ(refused.code, StatusCode::kAborted);
  EXPECT_NE(refused.message.find("max_held"), std::string::npos) << refused.message;
  EXPECT_EQ(tracked->held_count(), 2u);
  ASSERT_TRUE(events.WaitRestarts(1));
  EXPECT_EQ(tracked->revision(), 2);
  ASSERT_TRUE(tracked->Apply({Fact("c", 3)}, nullptr, "c").ok());  // the game's choice: write it again
  EXPECT_EQ(State(*s.client, "g").revision(), 3);
}

TEST(TrackedWrites, WithoutARestartToFollowWritesAreNotApplied) {
  // No policy: refused at once, typed.
  auto alone = e2e::Launch();
  ASSERT_TRUE(alone.process);
  auto tracked = Track(*alone.client, "g");
  ASSERT_TRUE(tracked);
  KillAndWaitDown(*alone.process);
  EXPECT_EQ(alone.process->status(), SidecarStatus::kFailed);
  Status st = tracked->Apply({Fact("a", 1)});
  EXPECT_TRUE(st.write_not_applied()) << st.ToString();
  EXPECT_NE(st.message.find("no restart follows"), std::string::npos) << st.message;
  EXPECT_EQ(tracked->held_count(), 0u);
  EXPECT_TRUE(tracked->pending_delta_id().empty());
}

TEST(TrackedWrites, AReplayedBatchNeverMovesTheRevisionBack) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  auto tracked = Track(*s.client, "g");
  ASSERT_TRUE(tracked);
  ASSERT_TRUE(tracked->Apply({Fact("a", 1)}, nullptr, "a").ok());
  ASSERT_TRUE(tracked->Apply({Fact("b", 2)}).ok());
  v1::ApplyDeltasResponse replay;
  ASSERT_TRUE(tracked->Apply({Fact("a", 1)}, &replay, "a").ok());  // the game resends A under its ID
  EXPECT_TRUE(replay.replayed());
  EXPECT_EQ(replay.revision(), 1);
  EXPECT_EQ(tracked->revision(), 2);
  v1::ApplyDeltasResponse next;
  Status st = tracked->Apply({Fact("c", 3)}, &next);  // not STALE_REVISION
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(next.revision(), 3);
}

TEST(TrackedWrites, OpeningATrackedSessionAgainSharesItsStateAndItsWritesSurvive) {
  StateDir dir;
  Events events;
  auto s = e2e::Launch(WithStateDir(Slow(testing_support::RealOptions()), dir));
  ASSERT_TRUE(s.process);
  events.Watch(*s.process);
  auto first = Track(*s.client, "g");
  auto second = Track(*s.client, "g");
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->Apply({Fact("a", 1)}).ok());
  EXPECT_EQ(second->revision(), 1);
  KillAndWaitDown(*s.process);
  EXPECT_TRUE(first->Apply({Fact("b", 2)}).write_kept());
  EXPECT_TRUE(second->Apply({Fact("c", 3)}).write_kept());
  EXPECT_EQ(first->held_count(), 2u);
  ASSERT_TRUE(events.WaitRestarts(1));
  v1::GetStateResponse state = State(*s.client, "g");
  EXPECT_EQ(state.revision(), 3);
  EXPECT_TRUE(HasFact(state, "b") && HasFact(state, "c"));
  {
    std::lock_guard<std::mutex> lock(events.mu);
    EXPECT_EQ(events.restarts.back().sessions.size(), 1u) << "one supervised state for the session";
  }
}

// Issue 34 item 6: the error and the status agree, in the same call.
TEST(TrackedWrites, StatusIsNoLongerReadyWhenACallReturnsGone) {
  for (bool policy : {true, false}) {
    StateDir dir;
    game_sidecar::SidecarOptions options = WithStateDir(testing_support::RealOptions(), dir);
    if (policy) options = crash::WithRestart(options, 10);
    auto s = e2e::Launch(options);
    ASSERT_TRUE(s.process);
    auto tracked = Track(*s.client, "g");
    ASSERT_TRUE(tracked);
    std::atomic<bool> stop{false};
    std::vector<SidecarStatus> seen;
    std::thread game([&] {
      for (int k = 1; !stop.load(); ++k) {
        Status st = tracked->Apply({Fact("k", k)});
        if (st.sidecar_gone() || st.write_not_applied()) seen.push_back(s.process->status());
        if (!policy && !st.ok()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    for (int kill_no = 0; kill_no < (policy ? 3 : 1); ++kill_no) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
      ASSERT_TRUE(Eventually([&] { return s.process->status() != SidecarStatus::kReady; }, kGenerous));
      if (policy) ASSERT_TRUE(Eventually([&] { return s.process->status() == SidecarStatus::kReady; }, kGenerous));
    }
    stop = true;
    game.join();
    EXPECT_FALSE(seen.empty());
    for (SidecarStatus status : seen) EXPECT_NE(status, SidecarStatus::kReady);
  }
}

// A game writing as fast as it can, retrying at once when the held queue is
// full: the restart still ends (the last held writes go with the gate closed),
// and every write is in the session once.
TEST(TrackedWrites, AGameWritingAsFastAsItCanDoesNotKeepTheRestartFromFinishing) {
  Restartable r;
  ASSERT_TRUE(r.ok());
  auto& s = r.s;
  auto& events = r.events;
  auto& tracked = r.tracked;
  tracked->set_max_held(100);  // the sends take a round trip each: keep the test short
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread game([&] {
    for (int k = 1; !stop.load();) {
      Status st = tracked->Apply({Fact("k" + std::to_string(k % 512), k)}, nullptr, "b" + std::to_string(k));
      if (st.write_not_applied()) continue;  // full: again, at once
      written = k++;
    }
  });
  ASSERT_TRUE(Eventually([&] { return tracked->revision() >= 10; }, kGenerous));
  ASSERT_EQ(kill(s.process->pid(), SIGKILL), 0);
  bool restarted = events.WaitRestarts(1);
  bool went_on = restarted && Eventually([&] { return tracked->revision() >= written.load() - 200; }, kGenerous);
  stop = true;
  game.join();
  ASSERT_TRUE(restarted) << "the restart finishes";
  ASSERT_TRUE(went_on);
  ASSERT_TRUE(Eventually([&] { return tracked->held_count() == 0 && tracked->pending_delta_id().empty(); },
                         kGenerous));
  EXPECT_EQ(State(*s.client, "g").revision(), written.load());
}
