// The non-blocking forms (issue 25 item 2) against the real sidecar: results
// arrive only through CallQueue::Drain, on the draining thread, each to its own
// call's callback, in submission order; a Launch, calls and a Stop never block
// the game thread, also when the sidecar hangs; a queue destroyed with calls
// pending returns at once, runs no callback and frees everything.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"
#include "game_sidecar/call_queue.h"
#include "game_sidecar/tracked_session.h"

using game_sidecar::CallHandle;
using game_sidecar::CallQueue;
using game_sidecar::ExitInfo;
using game_sidecar::LaunchError;
using game_sidecar::SidecarClient;
using game_sidecar::SidecarProcess;
using game_sidecar::Status;
using game_sidecar::StatusCode;
using game_sidecar::TrackedSession;
using testing_support::Eventually;
namespace v1 = ::sidecar::v1;

namespace {

constexpr auto kGenerous = std::chrono::seconds(60);

// The game loop of a test: drain on this thread until `done()` holds.
template <class Pred>
bool DrainUntil(CallQueue& queue, Pred done, std::chrono::milliseconds limit = kGenerous) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    queue.WaitReady(std::chrono::milliseconds(20));
    queue.Drain();
  }
  return true;
}

v1::DeltaOp Fact(const std::string& key, int64_t value) {
  v1::DeltaOp op;
  op.mutable_set_scene_fact()->set_key(key);
  op.mutable_set_scene_fact()->mutable_value()->set_int_value(value);
  return op;
}

v1::OpenSessionRequest OpenRequest(const std::string& session_id) {
  v1::OpenSessionRequest open;
  open.set_session_id(session_id);
  return open;
}

}  // namespace

// The result is ready (the worker has the answer) and still no callback has
// run: only Drain runs it, on the thread that drains.
TEST(AsyncCalls, ResultsArriveOnlyThroughDrainOnTheDrainingThread) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  CallQueue queue;
  bool called = false;
  std::thread::id called_on;
  v1::GetInfoResponse info;
  CallHandle call = s.client->GetInfoAsync(queue, {}, [&](Status st, v1::GetInfoResponse r) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    called = true;
    called_on = std::this_thread::get_id();
    info = std::move(r);
  });
  EXPECT_NE(call.id(), 0u);
  ASSERT_TRUE(queue.WaitReady(kGenerous));
  EXPECT_FALSE(called) << "a callback ran before Drain";
  EXPECT_TRUE(call.pending());
  EXPECT_EQ(queue.pending(), 1u);
  EXPECT_EQ(queue.Drain(), 1u);
  ASSERT_TRUE(called);
  EXPECT_EQ(called_on, std::this_thread::get_id());
  EXPECT_EQ(info.pid(), s.process->pid());
  EXPECT_FALSE(call.pending());
  EXPECT_FALSE(call.Cancel()) << "a delivered call cannot be cancelled";
  EXPECT_EQ(queue.pending(), 0u);
  EXPECT_EQ(queue.Drain(), 0u);
}

// Routing per call: concurrent calls (two queues, two calls on one of them)
// with their own callbacks; each callback gets its own call's answer.
TEST(AsyncCalls, EachCallGetsItsOwnResult) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  CallQueue game, loader;
  std::string a_id, b_id;
  Status missing;
  bool a_done = false, b_done = false, missing_done = false;
  CallHandle a = s.client->OpenSessionAsync(game, OpenRequest("route-a"), [&](Status st, v1::OpenSessionResponse r) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    a_id = r.session_id();
    a_done = true;
  });
  CallHandle b = s.client->OpenSessionAsync(loader, OpenRequest("route-b"), [&](Status st, v1::OpenSessionResponse r) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    b_id = r.session_id();
    b_done = true;
  });
  v1::GetStateRequest get;
  get.set_session_id("route-nowhere");
  CallHandle c = s.client->GetStateAsync(game, get, [&](Status st, v1::GetStateResponse) {
    missing = st;
    missing_done = true;
  });
  EXPECT_NE(a.id(), c.id());
  auto all = [&] { return a_done && b_done && missing_done; };
  auto deadline = std::chrono::steady_clock::now() + kGenerous;
  while (!all() && std::chrono::steady_clock::now() < deadline) {
    game.WaitReady(std::chrono::milliseconds(20));
    game.Drain();
    loader.Drain();
  }
  ASSERT_TRUE(all());
  EXPECT_EQ(a_id, "route-a");
  EXPECT_EQ(b_id, "route-b");
  EXPECT_EQ(missing.code, StatusCode::kNotFound) << missing.ToString();
  EXPECT_EQ(missing.reason, "SESSION_NOT_FOUND") << missing.ToString();
}

// Two batches submitted one after the other are applied in that order: the
// second is based on the revision the first makes, so out of order it would be STALE.
TEST(AsyncCalls, TwoApplyDeltasAreAppliedInSubmissionOrder) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "order"));  // revision 1
  CallQueue queue;
  std::vector<std::pair<int, int64_t>> answers;  // (batch, revision), in delivery order
  for (int i = 1; i <= 2; ++i) {
    v1::ApplyDeltasRequest req;
    req.set_session_id("order");
    req.set_base_revision(i);
    req.set_delta_id("order-" + std::to_string(i));
    *req.add_ops() = Fact("tick", i);
    // The first batch is the heavier one: a worker that raced them would finish the second first.
    for (int k = 0; i == 1 && k < 300; ++k) *req.add_ops() = Fact("filler-" + std::to_string(k), k);
    s.client->ApplyDeltasAsync(queue, req, [&answers, i](Status st, v1::ApplyDeltasResponse r) {
      EXPECT_TRUE(st.ok()) << "batch " << i << ": " << st.ToString();
      answers.emplace_back(i, r.revision());
    });
  }
  ASSERT_TRUE(DrainUntil(queue, [&] { return answers.size() == 2; }));
  EXPECT_EQ(answers[0], std::make_pair(1, int64_t{2}));
  EXPECT_EQ(answers[1], std::make_pair(2, int64_t{3}));

  // A tracked session's batches likewise, each on top of the revision the one before made.
  Status st;
  auto tracked = TrackedSession::Open(*s.client, OpenRequest("order"), &st);
  ASSERT_TRUE(tracked) << st.ToString();
  std::vector<int64_t> revisions;
  for (int i = 0; i < 3; ++i) {
    tracked->ApplyAsync(queue, {Fact("tracked", i)}, [&](Status applied, v1::ApplyDeltasResponse r) {
      EXPECT_TRUE(applied.ok()) << applied.ToString();
      revisions.push_back(r.revision());
    });
  }
  tracked.reset();  // the calls hold the session's state
  ASSERT_TRUE(DrainUntil(queue, [&] { return revisions.size() == 3; }));
  EXPECT_EQ(revisions, (std::vector<int64_t>{4, 5, 6}));
  v1::GetStateRequest get;
  get.set_session_id("order");
  v1::GetStateResponse state;
  ASSERT_TRUE(s.client->GetState(get, &state).ok());
  EXPECT_EQ(state.revision(), 6);
  std::map<std::string, int64_t> facts;
  for (const auto& f : state.snapshot().scene_facts()) facts[f.key()] = f.value().int_value();
  EXPECT_EQ(facts["tick"], 2);
  EXPECT_EQ(facts["tracked"], 2);
}

// The whole life of a sidecar from a game loop that only submits and drains:
// launch, open, apply, a run's server-side cancel, shutdown-free stop.
TEST(AsyncCalls, LaunchOpenApplyStopWithoutBlocking) {
  CallQueue queue;
  std::unique_ptr<SidecarProcess> process;
  bool launched = false;
  SidecarProcess::LaunchAsync(testing_support::RealOptions(), queue,
                              [&](std::unique_ptr<SidecarProcess> p, LaunchError error) {
                                EXPECT_TRUE(p) << error.ToString();
                                process = std::move(p);
                                launched = true;
                              });
  ASSERT_TRUE(DrainUntil(queue, [&] { return launched; }));
  ASSERT_TRUE(process);
  auto client = std::make_unique<SidecarClient>(*process);

  std::unique_ptr<TrackedSession> session;
  int64_t applied_revision = -1;
  bool applied = false;
  TrackedSession::OpenAsync(*client, queue, OpenRequest("flow"), [&](Status st, std::unique_ptr<TrackedSession> t) {
    ASSERT_TRUE(st.ok()) << st.ToString();
    session = std::move(t);
    // Submitted from inside a callback: the game reacts on its own thread.
    session->ApplyAsync(queue,
                        {e2e::Upsert("level/gate", v1::ENTITY_KIND_LOCATION, "the north gate"),
                         e2e::Upsert("BP_Player_C_0", v1::ENTITY_KIND_PLAYER, "Wren", "level/gate")},
                        [&](Status a, v1::ApplyDeltasResponse r) {
                          EXPECT_TRUE(a.ok()) << a.ToString();
                          applied_revision = r.revision();
                          applied = true;
                        });
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return applied; }));
  EXPECT_EQ(applied_revision, 1);
  EXPECT_EQ(session->revision(), 1);

  // A run cancelled on the server through the queue.
  game_sidecar::RunEventQueue events;
  auto run = client->StartRun(e2e::Narrate("flow", "The wind rises. #stall-mid", "slow"), events.Sink());
  game_sidecar::RunUpdate first;
  ASSERT_TRUE(events.WaitPop(&first, kGenerous));
  Status cancel_status;
  bool cancelled = false;
  run->CancelOnServerAsync(queue, [&](Status st) {
    cancel_status = st;
    cancelled = true;
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return cancelled; }));
  EXPECT_TRUE(cancel_status.ok()) << cancel_status.ToString();
  Status run_status;
  ASSERT_TRUE(run->WaitFor(kGenerous, &run_status));
  EXPECT_EQ(run_status.code, StatusCode::kCancelled) << run_status.ToString();

  ExitInfo exit;
  bool stopped = false;
  int pid = process->pid();
  SidecarProcess::StopAsync(std::move(process), queue, [&](ExitInfo e) {
    exit = e;
    stopped = true;
  });
  EXPECT_FALSE(process);
  ASSERT_TRUE(DrainUntil(queue, [&] { return stopped; }));
  EXPECT_EQ(exit.how, ExitInfo::How::kExited);
  EXPECT_EQ(exit.exit_code, 0);
  EXPECT_FALSE(testing_support::Alive(pid));
  // The client outlives the process: its calls now fail at once, also through the queue.
  Status after;
  bool answered = false;
  client->GetInfoAsync(queue, {}, [&](Status st, v1::GetInfoResponse) {
    after = st;
    answered = true;
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return answered; }));
  EXPECT_TRUE(after.sidecar_gone()) << after.ToString();
}

// A hung sidecar with a call in flight: every Drain returns without it until
// the supervised process declares the sidecar gone; then the call ends with
// SIDECAR_GONE (hung), through Drain. A Stop of the next hung sidecar goes the same way.
TEST(AsyncCalls, HungSidecarCallEndsGoneThroughDrain) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "hang"));
  CallQueue queue;
  int pid = s.process->pid();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  Status result;
  bool done = false;
  v1::GetStateRequest get;
  get.set_session_id("hang");
  s.client->GetStateAsync(queue, get, [&](Status st, v1::GetStateResponse) {
    result = st;
    done = true;
  });
  size_t empty_drains = 0;
  ASSERT_TRUE(DrainUntil(queue, [&] {
    if (!done && !s.process->wait_exit(std::chrono::milliseconds(0))) ++empty_drains;
    return done;
  }));
  EXPECT_GT(empty_drains, 0u) << "no drain ran while the sidecar hung";
  EXPECT_TRUE(result.sidecar_gone()) << result.ToString();
  ASSERT_TRUE(result.sidecar_exit);
  EXPECT_TRUE(result.sidecar_exit->hung) << result.sidecar_exit->describe();

  // StopAsync of a sidecar that hangs (and is not declared hung yet): the game
  // thread drains while the worker kills it.
  auto options = testing_support::RealOptions();
  options.hang_timeout = std::chrono::seconds(600);
  auto t = e2e::Launch(options);
  ASSERT_TRUE(t.process);
  int hung_pid = t.process->pid();
  ASSERT_EQ(kill(hung_pid, SIGSTOP), 0);
  ExitInfo exit;
  bool stopped = false;
  SidecarProcess::StopAsync(std::move(t.process), queue, [&](ExitInfo e) {
    exit = e;
    stopped = true;
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return stopped; }));
  EXPECT_EQ(exit.how, ExitInfo::How::kKilled);
  EXPECT_EQ(exit.term_signal, SIGKILL);
  EXPECT_FALSE(testing_support::Alive(hung_pid));
}

// A cancelled call's callback never runs: before it started (it is not sent),
// or with its result ready and not drained.
TEST(AsyncCalls, CancelledCallbacksNeverRun) {
  auto s = e2e::Launch();
  ASSERT_TRUE(s.process);
  CallQueue queue;
  // The game's own work first, held until the cancel is made: the calls behind it have not started.
  std::promise<void> gate;
  queue.Submit([held = gate.get_future()]() mutable { held.wait(); return 0; }, [](int) {});
  bool first = false, second = false, third = false;
  CallHandle a = s.client->OpenSessionAsync(queue, OpenRequest("cancel-a"), [&](Status, v1::OpenSessionResponse) { first = true; });
  CallHandle b = s.client->OpenSessionAsync(queue, OpenRequest("cancel-b"), [&](Status, v1::OpenSessionResponse) { second = true; });
  CallHandle c = s.client->GetInfoAsync(queue, {}, [&](Status, v1::GetInfoResponse) { third = true; });
  EXPECT_EQ(queue.pending(), 4u);
  EXPECT_TRUE(b.Cancel());
  EXPECT_FALSE(b.Cancel());
  EXPECT_FALSE(b.pending());
  EXPECT_TRUE(a.pending());
  EXPECT_EQ(queue.pending(), 3u);
  gate.set_value();
  ASSERT_TRUE(DrainUntil(queue, [&] { return first && third; }));
  EXPECT_FALSE(second);
  EXPECT_FALSE(b.pending());
  // The cancelled OpenSession was never sent: the session does not exist.
  v1::OpenSessionResponse opened;
  ASSERT_TRUE(s.client->OpenSession(OpenRequest("cancel-b"), &opened).ok());
  EXPECT_TRUE(opened.created());

  // Ready but not drained: cancelled, it is skipped.
  bool late = false;
  CallHandle d = s.client->GetInfoAsync(queue, {}, [&](Status, v1::GetInfoResponse) { late = true; });
  ASSERT_TRUE(queue.WaitReady(kGenerous));
  EXPECT_TRUE(d.Cancel());
  EXPECT_EQ(queue.Drain(), 0u);
  EXPECT_FALSE(late);
}

// Destroying the queue with a call in flight on a hung sidecar (no deadline,
// no hang verdict: the call cannot end while it is stopped), calls queued
// behind it and a launched process nobody drained: the destructor returns at
// once, no callback ever runs, and once the sidecar resumes the worker frees
// every call and stops the undelivered process.
TEST(AsyncCalls, DestroyingTheQueueWithCallsPendingDropsThem) {
  auto options = testing_support::RealOptions();
  options.hang_timeout = std::chrono::seconds(600);
  auto s = e2e::Launch(options);
  ASSERT_TRUE(s.process);
  game_sidecar::ClientOptions forever;
  forever.call_timeout = std::chrono::milliseconds(0);
  forever.keepalive = std::chrono::milliseconds(0);
  SidecarClient client(*s.process, forever);
  ASSERT_TRUE(client.GetInfo({}, nullptr).ok());

  // A sidecar launched through a queue whose result is never drained.
  auto dropped_options = testing_support::RealOptions();
  std::string marker = "dropped-launch-" + std::to_string(getpid());
  dropped_options.env.push_back({"GAME_SIDECAR_TEST_MARKER", marker});
  auto calls_ran = std::make_shared<int>(0);
  std::weak_ptr<int> in_flight_token, queued_token, launch_token;
  {
    CallQueue launcher;
    auto token = std::make_shared<int>(0);
    launch_token = token;
    SidecarProcess::LaunchAsync(dropped_options, launcher,
                                [token, calls_ran](std::unique_ptr<SidecarProcess>, LaunchError) { ++*calls_ran; });
    token.reset();
    ASSERT_TRUE(launcher.WaitReady(kGenerous));  // launched, not drained
  }
  ASSERT_TRUE(Eventually([&] { return launch_token.expired(); }, kGenerous));

  ASSERT_EQ(kill(s.process->pid(), SIGSTOP), 0);
  {
    CallQueue queue;
    auto a = std::make_shared<int>(0);
    auto b = std::make_shared<int>(0);
    in_flight_token = a;
    queued_token = b;
    client.GetInfoAsync(queue, {}, [a, calls_ran](Status, v1::GetInfoResponse) { ++*calls_ran; });
    client.OpenSessionAsync(queue, OpenRequest("never"), [b, calls_ran](Status, v1::OpenSessionResponse) { ++*calls_ran; });
    a.reset();
    b.reset();
    ASSERT_TRUE(Eventually([&] { return queue.pending() == 2; }));
    queue.Drain();  // nothing to deliver: the first call hangs
  }  // returns although the call in flight cannot end
  EXPECT_FALSE(in_flight_token.expired()) << "the destructor waited for the call in flight";
  ASSERT_EQ(kill(s.process->pid(), SIGCONT), 0);
  EXPECT_TRUE(Eventually([&] { return in_flight_token.expired() && queued_token.expired(); }, kGenerous));
  EXPECT_EQ(*calls_ran, 0) << "a callback ran after its queue was destroyed";
  // The call queued behind the hung one was dropped, never sent.
  v1::OpenSessionResponse opened;
  ASSERT_TRUE(client.OpenSession(OpenRequest("never"), &opened).ok());
  EXPECT_TRUE(opened.created());
  // No sidecar with the marker is left running.
  EXPECT_TRUE(Eventually([&] {
    // -q: 0 when found, even if some /proc entry vanished meanwhile (2 otherwise).
    return std::system(("grep -qsa " + marker + " /proc/[0-9]*/environ").c_str()) != 0;
  }, kGenerous));
}

// The rest of the unary calls through one queue, submitted all at once and
// relying on its order: a world over one message (ReplaceState and
// ImportSession in pieces), export, import, state, prompt preview, transcript,
// a cancel of no run, a tracked session's resync, close, and a Shutdown.
TEST(AsyncCalls, EveryOtherUnaryCallThroughTheQueue) {
  const std::string config = testing::TempDir() + "/async_chunked_sidecar.toml";
  {
    std::ifstream base(testing_support::TestsDir() + "/sidecar_test.toml");
    std::ofstream out(config);
    out << base.rdbuf() << "\n[state]\nmax_request_bytes = 1048576\nmax_snapshot_bytes = 8000000\n";
  }
  auto s = e2e::Launch(testing_support::RealOptions(config));
  ASSERT_TRUE(s.process);
  CallQueue queue;
  std::vector<std::string> log;  // which callbacks ran, in order
  auto ok = [&log](const std::string& what) {
    return [&log, what](Status st, auto) {
      EXPECT_TRUE(st.ok()) << what << ": " << st.ToString();
      log.push_back(what);
    };
  };

  v1::ReplaceStateRequest replace;
  replace.set_session_id("big");
  for (int i = 0; i < 150; ++i) {  // 2.2 MB: over the 1 MiB message limit
    auto* e = replace.mutable_snapshot()->add_entities();
    e->set_id("e" + std::to_string(i));
    e->set_kind(v1::ENTITY_KIND_CHARACTER);
    e->set_description(std::string(15000, static_cast<char>('a' + i % 26)));
  }
  ASSERT_GT(replace.ByteSizeLong(), 2u * 1048576u);
  s.client->OpenSessionAsync(queue, OpenRequest("big"), ok("open"));
  s.client->ReplaceStateAsync(queue, replace, ok("replace"));
  std::string blob;
  s.client->ExportSessionAsync(queue, "big", [&](Status st, v1::ExportSessionResponse r) {
    ASSERT_TRUE(st.ok()) << st.ToString();
    log.push_back("export");
    blob = r.blob();
    v1::ImportSessionRequest import;
    import.set_session_id("big-copy");
    import.set_blob(blob);
    s.client->ImportSessionAsync(queue, import, ok("import"));
    v1::GetStateRequest get;
    get.set_session_id("big-copy");
    s.client->GetStateAsync(queue, get, [&](Status got, v1::GetStateResponse state) {
      ASSERT_TRUE(got.ok()) << got.ToString();
      log.push_back("state");
      ASSERT_EQ(state.snapshot().entities_size(), 150);
      EXPECT_EQ(state.snapshot().entities(149).description(), replace.snapshot().entities(149).description());
    });
    s.client->CloseSessionAsync(queue, "big-copy", ok("close"));
  });
  v1::PreviewPromptRequest preview;
  preview.mutable_run()->set_session_id("big");
  preview.mutable_run()->mutable_narrate()->set_text("The gate opens.");
  s.client->PreviewPromptAsync(queue, preview, [&](Status st, v1::PreviewPromptResponse r) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_GT(r.messages_size(), 0);
    log.push_back("preview");
  });
  v1::ReadTranscriptRequest transcript;
  transcript.set_session_id("big");
  s.client->ReadTranscriptAsync(queue, transcript, ok("transcript"));
  s.client->CancelRunAsync(queue, "no-such-run", [&](Status st) {
    EXPECT_EQ(st.reason, "RUN_NOT_FOUND") << st.ToString();
    log.push_back("cancel");
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return log.size() == 9; }));
  EXPECT_EQ(log, (std::vector<std::string>{"open", "replace", "export", "preview", "transcript", "cancel", "import",
                                           "state", "close"}));
  ASSERT_GT(blob.size(), 1048576u);  // the import went in pieces too

  // A tracked session's resync, then the shutdown the game asked for.
  Status st;
  auto tracked = TrackedSession::Open(*s.client, OpenRequest("small"), &st);
  ASSERT_TRUE(tracked) << st.ToString();
  v1::ReplaceStateRequest small;
  *small.mutable_snapshot()->add_entities() = replace.snapshot().entities(0);
  bool resynced = false;
  tracked->ReplaceStateAsync(queue, small, [&](Status r, v1::ReplaceStateResponse resp) {
    EXPECT_TRUE(r.ok()) << r.ToString();
    EXPECT_EQ(resp.revision(), 1);
    resynced = true;
  });
  bool shut = false;
  s.client->ShutdownAsync(queue, "async test", [&](Status r) {
    EXPECT_TRUE(r.ok()) << r.ToString();
    shut = true;
  });
  ASSERT_TRUE(DrainUntil(queue, [&] { return resynced && shut; }));
  EXPECT_EQ(tracked->revision(), 1);
  game_sidecar::SidecarExit exit;
  ASSERT_TRUE(s.process->wait_exit(kGenerous, &exit));
  EXPECT_TRUE(exit.requested) << exit.describe();
}
