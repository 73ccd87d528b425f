// The real sidecar process, launched by SidecarProcess the way a game does:
// handshake, auth, sessions, revisions, and that it dies with its host.
#include <gtest/gtest.h>

#include <fstream>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_support.h"
#include "game_sidecar/tracked_session.h"

using e2e::Launch;
using e2e::v1::DeltaOp;
using game_sidecar::ExitInfo;
using game_sidecar::SidecarClient;
using testing_support::Alive;
using testing_support::Eventually;

static bool IsSocket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

TEST(RealSidecar, HandshakeOverUnixSocketThenGetInfo) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  const auto& h = s.process->handshake();
  EXPECT_EQ(h.transport, "unix");
  EXPECT_TRUE(IsSocket(h.address)) << h.address;
  EXPECT_EQ(h.pid, s.process->pid());
  EXPECT_TRUE(h.token.empty());  // we chose the token; the sidecar must not echo it
  e2e::v1::GetInfoResponse info;
  auto st = s.client->GetInfo({}, &info);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(info.pid(), s.process->pid());
  EXPECT_EQ(info.version(), h.version);
  bool speaks_v1 = false;
  for (int v : info.protocol_versions()) speaks_v1 = speaks_v1 || v == game_sidecar::kProtocolVersion;
  EXPECT_TRUE(speaks_v1);
  bool has_scripted = false;
  for (const auto& p : info.profiles()) has_scripted = has_scripted || (p.name() == "scripted" && p.is_default());
  EXPECT_TRUE(has_scripted) << info.DebugString();
}

TEST(RealSidecar, BadConfigExitsBeforeHandshakeWithItsReason) {
  game_sidecar::LaunchError err;
  auto p = game_sidecar::SidecarProcess::Launch(testing_support::RealOptions("/nonexistent/sidecar.toml"), &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, game_sidecar::LaunchError::Kind::kExitedBeforeHandshake) << err.ToString();
  EXPECT_EQ(err.exit_code, 2) << err.ToString();  // the sidecar's usage-error code
  EXPECT_NE(err.stderr_tail.find("sidecar.toml"), std::string::npos) << err.ToString();
}

TEST(RealSidecar, MissingMagicIsRefused) {
  auto options = testing_support::RealOptions();
  options.env = {{"GAME_SIDECAR_MAGIC", "not-a-game"}};  // overrides the launcher's value
  game_sidecar::LaunchError err;
  auto p = game_sidecar::SidecarProcess::Launch(options, &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, game_sidecar::LaunchError::Kind::kExitedBeforeHandshake) << err.ToString();
  EXPECT_EQ(err.exit_code, 2);
  EXPECT_NE(err.stderr_tail.find("GAME_SIDECAR_MAGIC"), std::string::npos) << err.ToString();
}

TEST(RealSidecar, HandshakeOverLoopbackTcp) {
  auto options = testing_support::RealOptions();
  options.args.push_back("--listen");
  options.args.push_back("tcp://127.0.0.1:0");
  auto s = Launch(options);
  ASSERT_TRUE(s.process);
  EXPECT_EQ(s.process->handshake().transport, "tcp");
  EXPECT_EQ(s.process->target().rfind("127.0.0.1:", 0), 0u) << s.process->target();
  auto st = s.client->GetInfo({}, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(RealSidecar, WrongTokenIsUnauthenticatedAndTouchesNothing) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  SidecarClient intruder(s.process->target(), "not-the-token");
  auto st = intruder.GetInfo({}, nullptr);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kUnauthenticated) << st.ToString();
  EXPECT_EQ(st.reason, "UNAUTHENTICATED");

  e2e::v1::OpenSessionRequest open;
  open.set_session_id("intruded");
  st = intruder.OpenSession(open, nullptr);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kUnauthenticated) << st.ToString();

  // The rejected call created nothing: the real client creates it now.
  e2e::v1::OpenSessionResponse opened;
  st = s.client->OpenSession(open, &opened);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(opened.created());
}

TEST(RealSidecar, OpenSessionCreatesThenResumes) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  e2e::v1::OpenSessionRequest open;
  open.set_session_id("save-slot-1");
  e2e::v1::OpenSessionResponse first, second;
  ASSERT_TRUE(s.client->OpenSession(open, &first).ok());
  EXPECT_TRUE(first.created());
  EXPECT_EQ(first.session_id(), "save-slot-1");
  EXPECT_EQ(first.revision(), 0);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "save-slot-1"));
  ASSERT_TRUE(s.client->OpenSession(open, &second).ok());
  EXPECT_FALSE(second.created());
  EXPECT_EQ(second.revision(), 1);
}

TEST(RealSidecar, StaleRevisionIsAbortedWithReasonAndChangesNothing) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "s"));  // now at revision 1

  e2e::v1::ApplyDeltasRequest stale;
  stale.set_session_id("s");
  stale.set_base_revision(0);
  stale.set_delta_id("late-batch");
  *stale.add_ops() = e2e::Upsert("BP_Rat_C_1", e2e::v1::ENTITY_KIND_CHARACTER, "a rat", "level/gate");
  auto st = s.client->ApplyDeltas(stale, nullptr);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kAborted) << st.ToString();
  EXPECT_EQ(st.reason, "STALE_REVISION");
  EXPECT_EQ(st.metadata["current_revision"], "1");

  e2e::v1::GetStateRequest get;
  get.set_session_id("s");
  e2e::v1::GetStateResponse state;
  ASSERT_TRUE(s.client->GetState(get, &state).ok());
  EXPECT_EQ(state.revision(), 1);
  for (const auto& e : state.snapshot().entities()) EXPECT_NE(e.id(), "BP_Rat_C_1");

  // The same batch on the right base applies once; replaying its delta_id is idempotent.
  stale.set_base_revision(1);
  e2e::v1::ApplyDeltasResponse applied, replayed;
  ASSERT_TRUE(s.client->ApplyDeltas(stale, &applied).ok());
  EXPECT_EQ(applied.revision(), 2);
  EXPECT_FALSE(applied.replayed());
  ASSERT_TRUE(s.client->ApplyDeltas(stale, &replayed).ok());
  EXPECT_EQ(replayed.revision(), 2);
  EXPECT_TRUE(replayed.replayed());
}

TEST(RealSidecar, UnknownSessionIsNotFound) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  e2e::v1::ApplyDeltasRequest req;
  req.set_session_id("never-opened");
  req.set_delta_id("d1");
  auto st = s.client->ApplyDeltas(req, nullptr);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kNotFound) << st.ToString();
  EXPECT_EQ(st.reason, "SESSION_NOT_FOUND");
}

TEST(RealSidecar, StreamDeltasReportsRejectedBatchesAndGoesOn) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "tick"));
  auto stream = s.client->StreamDeltas();
  e2e::v1::StreamDeltasRequest batch;
  batch.set_session_id("tick");
  for (int tick = 0; tick < 5; ++tick) {
    batch.set_base_revision(1 + tick);
    batch.set_delta_id("tick-" + std::to_string(tick));
    batch.clear_ops();
    auto* fact = batch.add_ops()->mutable_set_scene_fact();
    fact->set_key("tick");
    fact->mutable_value()->set_int_value(tick);
    e2e::v1::StreamDeltasResponse resp;
    auto st = stream->Apply(batch, &resp);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(resp.delta_id(), batch.delta_id());
    EXPECT_EQ(resp.revision(), 2 + tick);
  }
  batch.set_base_revision(3);  // stale: the session is at 6
  batch.set_delta_id("stale-tick");
  e2e::v1::StreamDeltasResponse resp;
  auto st = stream->Apply(batch, &resp);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kAborted) << st.ToString();
  EXPECT_EQ(st.reason, "STALE_REVISION");
  EXPECT_EQ(resp.revision(), 6);
  // The stream is still usable after the rejection.
  batch.set_base_revision(6);
  batch.set_delta_id("after-stale");
  st = stream->Apply(batch, &resp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(resp.revision(), 7);
  EXPECT_TRUE(stream->Finish().ok());
}

// A DeltaStream co-owns the client's connection: it goes on after the client is gone.
TEST(RealSidecar, DeltaStreamOutlivesTheClientThatOpenedIt) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  ASSERT_NO_FATAL_FAILURE(e2e::OpenScene(*s.client, "orphan-stream"));
  auto stream = s.client->StreamDeltas();
  s.client.reset();
  e2e::v1::StreamDeltasRequest batch;
  batch.set_session_id("orphan-stream");
  batch.set_base_revision(1);
  batch.set_delta_id("after-client");
  auto* fact = batch.add_ops()->mutable_set_scene_fact();
  fact->set_key("weather");
  fact->mutable_value()->set_string_value("fog");
  e2e::v1::StreamDeltasResponse resp;
  auto st = stream->Apply(batch, &resp);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(resp.revision(), 2);
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(RealSidecar, StopIsOrderlyAndRemovesTheSocket) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  std::string socket = s.process->handshake().address;
  int pid = s.process->pid();
  ExitInfo info = s.process->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kExited) << s.process->StderrTail();  // stdin EOF was enough
  EXPECT_EQ(info.exit_code, 0) << s.process->StderrTail();
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(IsSocket(socket));
}

TEST(RealSidecar, DestroyingSidecarProcessEndsTheSidecar) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  int pid = s.process->pid();
  std::string socket = s.process->handshake().address;
  ASSERT_TRUE(s.client->GetInfo({}, nullptr).ok());
  s.process.reset();  // the destructor closes stdin, waits, reaps
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(IsSocket(socket));
  auto st = s.client->GetInfo({}, nullptr);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kUnavailable) << st.ToString();
}

TEST(RealSidecar, ShutdownRpcEndsTheProcessInOrder) {
  auto s = Launch();
  ASSERT_TRUE(s.process);
  ASSERT_TRUE(s.client->WaitForConnected(std::chrono::seconds(10)));
  auto st = s.client->Shutdown("c++ test");
  ASSERT_TRUE(st.ok()) << st.ToString();
  int pid = s.process->pid();
  EXPECT_TRUE(Eventually([&] { return !Alive(pid); })) << s.process->StderrTail();
  ExitInfo info = s.process->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kExited);
  EXPECT_EQ(info.exit_code, 0) << s.process->StderrTail();
}

TEST(RealSidecar, LogLinesReachTheCallback) {
  testing_support::LogLines logs;
  auto options = testing_support::RealOptions();
  options.on_log = logs.Callback();
  auto s = Launch(options);
  ASSERT_TRUE(s.process);
  s.process->Stop();
  // Logs are JSON lines on stderr (docs/protocol.md §1).
  std::lock_guard<std::mutex> lock(logs.mu);
  ASSERT_FALSE(logs.lines.empty());
  for (const auto& l : logs.lines) EXPECT_EQ(l.front(), '{') << l;
}

TEST(RealSidecar, NoOrphanWhenTheHostIsKilled) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::string helper = HOST_HELPER, exe = testing_support::SidecarExe();
  std::string config = testing_support::TestsDir() + "/sidecar_test.toml";
  std::vector<char*> argv = {helper.data(), exe.data(), const_cast<char*>("serve"),
                             const_cast<char*>("--config"), config.data(), nullptr};
  pid_t host = -1;
  ASSERT_EQ(posix_spawn(&host, helper.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  std::string text;
  char buf[256];
  ssize_t n;
  while (text.find('\n') == std::string::npos && (n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, n);
  close(out[0]);
  ASSERT_EQ(text.rfind("sidecar_pid=", 0), 0u) << text;
  int sidecar = std::atoi(text.c_str() + 12);
  ASSERT_TRUE(Alive(sidecar));

  kill(host, SIGKILL);  // no destructor runs in the host
  int status = 0;
  waitpid(host, &status, 0);
  // The sidecar sees stdin EOF (the kernel closed the host's pipe end) and its
  // parent change; nothing of ours kept it alive.
  EXPECT_TRUE(Eventually([&] { return !Alive(sidecar); })) << "sidecar " << sidecar << " outlived its host";
}

// The server refuses any one message over its max_request_bytes (here 1 MiB,
// the least it allows) with RESOURCE_EXHAUSTED: a bigger world goes through
// ReplaceState / ImportSession in pieces (the Chunked calls) and arrives whole.
TEST(RealSidecar, AWorldOverOneMessageGoesInPieces) {
  const std::string config = testing::TempDir() + "/chunked_sidecar.toml";
  {
    std::ifstream base(testing_support::TestsDir() + "/sidecar_test.toml");
    std::ofstream out(config);
    out << base.rdbuf() << "\n[state]\nmax_request_bytes = 1048576\nmax_snapshot_bytes = 8000000\n";
  }
  auto s = Launch(testing_support::RealOptions(config));
  ASSERT_TRUE(s.process);
  e2e::v1::OpenSessionRequest open;
  open.set_session_id("big");
  e2e::v1::OpenSessionResponse opened;
  ASSERT_TRUE(s.client->OpenSession(open, &opened).ok());

  e2e::v1::ReplaceStateRequest replace;
  replace.set_session_id("big");
  for (int i = 0; i < 150; ++i) {  // 150 x 15,000 characters: 2.2 MB, over the 1 MiB limit
    auto* e = replace.mutable_snapshot()->add_entities();
    e->set_id("e" + std::to_string(i));
    e->set_kind(e2e::v1::ENTITY_KIND_CHARACTER);
    e->set_description(std::string(15000, static_cast<char>('a' + i % 26)));
  }
  ASSERT_GT(replace.ByteSizeLong(), 2u * 1048576u);
  e2e::v1::ReplaceStateResponse replaced;
  auto st = s.client->ReplaceState(replace, &replaced);
  ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << s.process->StderrTail();
  EXPECT_EQ(replaced.revision(), 1);

  auto same_world = [&](const std::string& session_id) {
    e2e::v1::GetStateRequest get;
    get.set_session_id(session_id);
    e2e::v1::GetStateResponse state;
    auto got = s.client->GetState(get, &state);
    ASSERT_TRUE(got.ok()) << got.ToString();
    ASSERT_EQ(state.snapshot().entities_size(), replace.snapshot().entities_size());
    for (int i = 0; i < state.snapshot().entities_size(); ++i) {
      EXPECT_EQ(state.snapshot().entities(i).id(), replace.snapshot().entities(i).id());
      EXPECT_EQ(state.snapshot().entities(i).description(), replace.snapshot().entities(i).description());
    }
  };
  same_world("big");

  e2e::v1::ExportSessionResponse exported;
  ASSERT_TRUE(s.client->ExportSession("big", &exported).ok());
  ASSERT_GT(exported.blob().size(), 1048576u);
  e2e::v1::ImportSessionRequest import;
  import.set_session_id("big-copy");
  import.set_blob(exported.blob());
  e2e::v1::ImportSessionResponse imported;
  st = s.client->ImportSession(import, &imported);
  ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << s.process->StderrTail();
  EXPECT_EQ(imported.session_id(), "big-copy");
  EXPECT_EQ(imported.revision(), 1);
  same_world("big-copy");

  // A tracker's resync (ReplaceState after a lost session) is no smaller: in pieces too.
  e2e::v1::OpenSessionRequest tracked_open;
  tracked_open.set_session_id("big-tracked");
  game_sidecar::Status opened_st;
  auto tracked = game_sidecar::TrackedSession::Open(*s.client, tracked_open, &opened_st);
  ASSERT_TRUE(tracked) << opened_st.ToString();
  replace.set_session_id("ignored: the tracker names its session");
  e2e::v1::ReplaceStateResponse tracked_replaced;
  st = tracked->ReplaceState(replace, &tracked_replaced);
  ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << s.process->StderrTail();
  EXPECT_EQ(tracked_replaced.revision(), 1);
  EXPECT_EQ(tracked->revision(), 1);
  same_world("big-tracked");

  // A refusal comes back through the pieces too, with the sidecar's reason, and changes nothing.
  replace.set_session_id("no-such-session");
  st = s.client->ReplaceState(replace, &replaced);
  EXPECT_EQ(st.code, game_sidecar::StatusCode::kNotFound) << st.ToString();
  EXPECT_EQ(st.reason, "SESSION_NOT_FOUND") << st.ToString();
  same_world("big");
}

// The real sidecar with stderr merged into stdout (`2>&1`, as Unreal's
// CreateProc does with one pipe): its log lines come first on the handshake's
// pipe, are skipped and reach on_log, and the launch works.
TEST(RealSidecar, MergedStderrAndStdoutStillFindTheHandshake) {
  auto options = testing_support::RealOptions();
  std::string command = "exec \"$0\"";
  for (size_t i = 0; i < options.args.size(); ++i) command += " \"$" + std::to_string(i + 1) + "\"";
  command += " 2>&1";
  std::vector<std::string> args = {"-c", command, options.executable};
  args.insert(args.end(), options.args.begin(), options.args.end());
  options.executable = "/bin/sh";
  options.args = args;
  testing_support::LogLines logs;
  options.on_log = logs.Callback();
  auto s = Launch(options);
  ASSERT_TRUE(s.process);
  e2e::v1::GetInfoResponse info;
  auto st = s.client->GetInfo({}, &info);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(info.pid(), s.process->pid());
  ExitInfo exit = s.process->Stop();
  EXPECT_EQ(exit.how, ExitInfo::How::kExited);
  // It logs "serving" before its handshake: the first line on the merged pipe was
  // a log line, skipped (and logged as is; a stdout line after the handshake is
  // logged with a "[stdout] " prefix).
  std::lock_guard<std::mutex> lock(logs.mu);
  bool serving_before = false;
  for (const auto& line : logs.lines)
    serving_before = serving_before || (line.rfind("{\"ts\"", 0) == 0 && line.find("\"serving\"") != std::string::npos);
  EXPECT_TRUE(serving_before) << (logs.lines.empty() ? std::string("no lines") : logs.lines[0]);
}
