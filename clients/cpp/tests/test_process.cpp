// SidecarProcess against tests/fake_sidecar.sh: each handshake failure is its
// own error with the stderr tail, nothing leaks into the child, and Stop
// escalates only as far as it must.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <unistd.h>

#include "game_sidecar/sidecar_process.h"
#include "test_support.h"

using game_sidecar::ExitInfo;
using game_sidecar::LaunchError;
using game_sidecar::SidecarProcess;
using testing_support::Alive;
using testing_support::Eventually;
using testing_support::FakeOptions;

TEST(SidecarProcessFaults, ExitedBeforeHandshakeCarriesExitCodeAndStderr) {
  LaunchError err;
  auto p = SidecarProcess::Launch(FakeOptions("exit-early"), &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kExitedBeforeHandshake);
  EXPECT_EQ(err.exit_code, 4);
  EXPECT_NE(err.stderr_tail.find("cannot load config (fake)"), std::string::npos) << err.ToString();
  EXPECT_NE(err.ToString().find("exited before handshake"), std::string::npos);
}

TEST(SidecarProcessFaults, ExitCode3IsStateDirLocked) {
  LaunchError err;
  auto p = SidecarProcess::Launch(FakeOptions("state-dir-locked"), &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kStateDirLocked) << err.ToString();
  EXPECT_EQ(err.exit_code, game_sidecar::kStateDirLockedExitCode);
  EXPECT_NE(err.message.find("--state-dir"), std::string::npos) << err.message;
  EXPECT_NE(err.stderr_tail.find("locked by another sidecar (fake)"), std::string::npos) << err.ToString();
  EXPECT_NE(err.ToString().find("state dir locked by another sidecar"), std::string::npos) << err.ToString();
}

TEST(SidecarProcessFaults, GarbageLineIsMalformedAndTheChildIsKilled) {
  LaunchError err;
  auto p = SidecarProcess::Launch(FakeOptions("garbage"), &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kMalformedHandshake);
  EXPECT_NE(err.message.find("this is not json"), std::string::npos) << err.message;
  EXPECT_NE(err.stderr_tail.find("warming up"), std::string::npos) << err.ToString();
}

TEST(SidecarProcessFaults, AnotherToolOrProtocolIsMalformed) {
  for (const char* mode : {"wrong-sidecar", "wrong-protocol"}) {
    LaunchError err;
    auto p = SidecarProcess::Launch(FakeOptions(mode), &err);
    ASSERT_EQ(p, nullptr) << mode;
    EXPECT_EQ(err.kind, LaunchError::Kind::kMalformedHandshake) << mode << ": " << err.ToString();
  }
}

TEST(SidecarProcessFaults, SilenceTimesOutWithStderrTail) {
  auto options = FakeOptions("silent");
  options.handshake_timeout = std::chrono::milliseconds(300);
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kTimedOut);
  EXPECT_NE(err.stderr_tail.find("loading something slow (fake)"), std::string::npos) << err.ToString();
}

TEST(SidecarProcessFaults, MissingExecutableIsSpawnFailed) {
  game_sidecar::SidecarOptions options;
  options.executable = "/nonexistent/game-sidecar";
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kSpawnFailed);
  EXPECT_NE(err.message.find("/nonexistent/game-sidecar"), std::string::npos) << err.message;
}

TEST(SidecarProcess, PassesMagicTokenAndEnvAndForwardsStderr) {
  testing_support::LogLines logs;
  auto options = FakeOptions("env");
  options.env = {{"FAKE_EXTRA", "hello"}};
  options.on_log = logs.Callback();
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_NE(p, nullptr) << err.ToString();
  EXPECT_EQ(p->token().size(), 64u);  // 256 random bits, hex
  EXPECT_EQ(p->target(), "127.0.0.1:9");
  EXPECT_TRUE(Eventually([&] {
    return logs.Contains("magic=game-sidecar-v1 token=" + p->token() + " extra=hello");
  })) << p->StderrTail();
  ExitInfo info = p->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kExited);
  EXPECT_EQ(info.exit_code, 0);
}

TEST(SidecarProcess, TwoLaunchesGetDifferentTokens) {
  auto a = SidecarProcess::Launch(FakeOptions("until-eof"), nullptr);
  auto b = SidecarProcess::Launch(FakeOptions("until-eof"), nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->token(), b->token());
}

TEST(SidecarProcess, ClosingStdinIsEnoughForAWellBehavedChild) {
  testing_support::LogLines logs;
  auto options = FakeOptions("until-eof");
  options.on_log = logs.Callback();
  auto p = SidecarProcess::Launch(options, nullptr);
  ASSERT_NE(p, nullptr);
  int pid = p->pid();
  ExitInfo info = p->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kExited);
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_FALSE(Alive(pid));
  // The reader drained stderr to the end: the goodbye line arrived.
  EXPECT_TRUE(logs.Contains("stdin closed, bye (fake)"));
  EXPECT_EQ(p->Stop().how, ExitInfo::How::kExited);  // idempotent
}

TEST(SidecarProcess, EscalatesToSigtermWhenStdinEofIsIgnored) {
  auto p = SidecarProcess::Launch(FakeOptions("ignore-eof"), nullptr);
  ASSERT_NE(p, nullptr);
  ExitInfo info = p->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kTerminated);
  EXPECT_EQ(info.term_signal, SIGTERM);
}

TEST(SidecarProcess, EscalatesToSigkillWhenSigtermIsIgnored) {
  auto p = SidecarProcess::Launch(FakeOptions("ignore-term"), nullptr);
  ASSERT_NE(p, nullptr);
  int pid = p->pid();
  ExitInfo info = p->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kKilled);
  EXPECT_EQ(info.term_signal, SIGKILL);
  EXPECT_FALSE(Alive(pid));
}

static std::set<int> OpenFds(int pid) {
  std::set<int> fds;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return fds;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
  closedir(d);
  return fds;
}

static std::string ExeName(int pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(path.rfind('/') + 1);
}

TEST(SidecarProcess, ChildGetsOnlyItsThreePipes) {
  // A descriptor the "game" opened without O_CLOEXEC: a naive fork+exec leaks it.
  int leaky = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  auto p = SidecarProcess::Launch(FakeOptions("ignore-eof"), nullptr);
  close(leaky);
  ASSERT_NE(p, nullptr);
  // The fake execs `sleep` after its handshake; look once it has.
  ASSERT_TRUE(Eventually([&] { return ExeName(p->pid()) == "sleep"; }));
  EXPECT_EQ(OpenFds(p->pid()), (std::set<int>{0, 1, 2}));
}
