// SidecarProcess against tests/fake_sidecar.sh: each handshake failure is its
// own error with the stderr tail, nothing leaks into the child, and Stop
// escalates only as far as it must.
#include <gtest/gtest.h>

#include <dirent.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <set>
#include <unistd.h>

#include "game_sidecar/sidecar_process.h"
#include "spawn_posix.h"
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

// A line that is not a handshake is skipped (stderr merged into stdout puts log
// lines there: docs/protocol.md §1); a program that then says nothing more
// times out, and the error names what it printed.
TEST(SidecarProcessFaults, GarbageLineIsSkippedAndNamedWhenNoHandshakeFollows) {
  auto options = FakeOptions("garbage");
  options.handshake_timeout = std::chrono::milliseconds(500);
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kHandshakeTimeout) << err.ToString();
  EXPECT_NE(err.message.find("1 stdout line was not a handshake, the last: this is not json"), std::string::npos)
      << err.message;
  EXPECT_NE(err.stderr_tail.find("warming up"), std::string::npos) << err.ToString();
}

// Unreal's usual CreateProc merges stderr into stdout: JSON log lines come
// before the handshake on the same pipe, and the launch still succeeds.
TEST(SidecarProcessFaults, LogLinesBeforeTheHandshakeAreSkippedAndLogged) {
  auto options = FakeOptions("log-first");
  testing_support::LogLines logs;
  options.on_log = logs.Callback();
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_NE(p, nullptr) << err.ToString();
  EXPECT_EQ(p->handshake().address, "127.0.0.1:9");
  std::lock_guard<std::mutex> lock(logs.mu);
  ASSERT_EQ(logs.lines.size(), 5u);
  EXPECT_EQ(logs.lines[0], R"({"ts": 1.0, "level": "info", "msg": "starting 1", "logger": "fake"})");
}

// A program that prints only other lines is refused past the bound (200
// lines), at once rather than at the timeout, as not a sidecar.
TEST(SidecarProcessFaults, OnlyOtherLinesPastTheBoundIsNotASidecar) {
  auto options = FakeOptions("log-forever");
  options.handshake_timeout = std::chrono::milliseconds(60000);
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kMalformedHandshake) << err.ToString();
  EXPECT_NE(err.message.find("not a game-sidecar: no handshake line within the first 200 lines"), std::string::npos)
      << err.message;
  EXPECT_NE(err.message.find("the last: {\"ts\": 1.0, \"level\": \"info\", \"msg\": \"line 201\"}"),
            std::string::npos)
      << err.message;
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
  EXPECT_EQ(err.kind, LaunchError::Kind::kHandshakeTimeout);
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
  // The exec's own errno comes back from the child, not a guess.
  EXPECT_NE(err.message.find(std::strerror(ENOENT)), std::string::npos) << err.message;
}

TEST(SidecarProcessFaults, NameNotInPathIsSpawnFailedWithEnoent) {
  game_sidecar::SidecarOptions options;
  options.executable = "no-such-game-sidecar-in-path";
  LaunchError err;
  ASSERT_EQ(SidecarProcess::Launch(options, &err), nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kSpawnFailed);
  EXPECT_NE(err.message.find(std::strerror(ENOENT)), std::string::npos) << err.message;
}

TEST(SidecarProcessFaults, NotExecutableIsSpawnFailedWithEacces) {
  char path[] = "/tmp/game-sidecar-noexec-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);  // mode 0600: exists, not executable
  game_sidecar::SidecarOptions options;
  options.executable = path;
  LaunchError err;
  auto p = SidecarProcess::Launch(options, &err);
  unlink(path);
  ASSERT_EQ(p, nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kSpawnFailed);
  EXPECT_NE(err.message.find(std::strerror(EACCES)), std::string::npos) << err.message;
}

TEST(SidecarProcessFaults, MissingWorkingDirectoryIsSpawnFailedAndSaysSo) {
  auto options = FakeOptions("ignore-eof");
  options.working_directory = "/nonexistent/state-folder";
  LaunchError err;
  ASSERT_EQ(SidecarProcess::Launch(options, &err), nullptr);
  EXPECT_EQ(err.kind, LaunchError::Kind::kSpawnFailed);
  EXPECT_NE(err.message.find("working directory /nonexistent/state-folder"), std::string::npos) << err.message;
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

// An exit the game did not ask for, after the handshake: reported with its
// code and the last 20 stderr lines, status failed, and Stop says it was gone.
TEST(SidecarProcess, ExitAfterHandshakeIsReportedWithCodeAndTail) {
  auto p = SidecarProcess::Launch(FakeOptions("die-after-hs"), nullptr);
  ASSERT_NE(p, nullptr);
  game_sidecar::SidecarExit exit;
  ASSERT_TRUE(p->wait_exit(std::chrono::seconds(30), &exit));
  EXPECT_EQ(exit.exit_code.value_or(-1), 7);
  EXPECT_FALSE(exit.signal.has_value());
  EXPECT_FALSE(exit.requested);
  EXPECT_FALSE(exit.hung);
  std::string expected;
  for (int i = 11; i <= 30; ++i) expected += (i > 11 ? "\n" : "") + std::string("line ") + std::to_string(i);
  EXPECT_EQ(exit.stderr_tail, expected);
  EXPECT_EQ(exit.describe(), "exited with code 7, not requested; last stderr: line 30");
  EXPECT_EQ(p->status(), game_sidecar::SidecarStatus::kFailed);
  ExitInfo info = p->Stop();
  EXPECT_EQ(info.how, ExitInfo::How::kGone);
  EXPECT_EQ(info.exit_code, 7);
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

// "3 -> /dev/null ..." for each descriptor, to say what leaked.
static std::string FdTargets(int pid) {
  std::string out;
  for (int fd : OpenFds(pid)) {
    char buf[4096];
    std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
    out += std::to_string(fd) + " -> " + (n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?") + "; ";
  }
  return out;
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
  // `sleep` opens and closes locale files as it starts, so a look may catch a
  // descriptor of its own for a moment; a leaked one stays and fails here.
  bool only_pipes = Eventually([&] { return OpenFds(p->pid()) == std::set<int>{0, 1, 2}; },
                               std::chrono::milliseconds(5000));
  EXPECT_TRUE(only_pipes) << FdTargets(p->pid());
}

TEST(SidecarProcess, ChildRunsInTheWorkingDirectoryWithExactlyTheGivenEnvironment) {
  char dir[] = "/tmp/game-sidecar-cwd-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("GAME_SIDECAR_TEST_FROM_GAME", "kept", 1);
  auto options = FakeOptions("ignore-eof");
  options.working_directory = dir;
  options.env.emplace_back("FAKE_EXTRA", "given");
  auto p = SidecarProcess::Launch(options, nullptr);
  unsetenv("GAME_SIDECAR_TEST_FROM_GAME");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(Eventually([&] { return ExeName(p->pid()) == "sleep"; }));
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(p->pid()) + "/cwd").c_str(), buf, sizeof buf - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), std::string(dir));
  // /proc/PID/environ: the game's environment, the extra key, magic and token, each once.
  // Read until it is there: during the shell's exec into sleep it reads as empty.
  std::string all;
  ASSERT_TRUE(Eventually([&] {
    std::ifstream environ_file("/proc/" + std::to_string(p->pid()) + "/environ");
    all.assign(std::istreambuf_iterator<char>(environ_file), std::istreambuf_iterator<char>());
    return !all.empty() && ExeName(p->pid()) == "sleep";
  }));
  std::multiset<std::string> entries;
  for (size_t start = 0, end; start < all.size(); start = end + 1) {
    end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    entries.insert(all.substr(start, end - start));
  }
  EXPECT_EQ(entries.count("GAME_SIDECAR_TEST_FROM_GAME=kept"), 1u);
  EXPECT_EQ(entries.count("FAKE_EXTRA=given"), 1u);
  EXPECT_EQ(entries.count("GAME_SIDECAR_TOKEN=" + p->token()), 1u);
  EXPECT_EQ(entries.count("GAME_SIDECAR_MAGIC=game-sidecar-v1"), 1u);
  size_t expected = game_sidecar::internal::EnvironmentWithout({"GAME_SIDECAR_MAGIC", "GAME_SIDECAR_TOKEN", "FAKE_EXTRA"}).size();
  EXPECT_EQ(entries.size(), expected + 4) << "the environment is exactly the given one";
  p->Stop();
  rmdir(dir);
}
