// The launcher without gRPC (GAME_SIDECAR_LAUNCHER_ONLY=ON), as a self-checking
// program: internal::Child against the Windows fake sidecar (tests/wine/
// fake_sidecar.exe) or the POSIX one. Built with mingw-w64 and run under Wine
// by scripts/test_windows_cpp. Prints "N passed, N failed"; exits 1 on a failure.
//
//   launcher_tests <fake sidecar> <launcher_host>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sidecar_child.h"
#ifdef _WIN32
#include <windows.h>
#include "spawn_win.h"
#else
#include "spawn_posix.h"
#endif

using game_sidecar::internal::ChildOptions;
using game_sidecar::internal::Child;
using namespace std::chrono_literals;

namespace {

std::string g_fake, g_host;
int g_passed = 0, g_failed = 0;
bool g_ok = true;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::printf("    CHECK failed at line %d: %s\n", __LINE__, #cond);        \
      g_ok = false;                                                              \
    }                                                                            \
  } while (0)

void Run(const char* name, const std::function<void()>& test) {
  g_ok = true;
  test();
  std::printf("%s %s\n", g_ok ? "PASS" : "FAIL", name);
  std::fflush(stdout);
  (g_ok ? g_passed : g_failed)++;
}

std::unique_ptr<Child> Launch(const std::string& exe, const std::vector<std::string>& args,
                              std::vector<std::string> env = {}, std::string* error = nullptr) {
  ChildOptions options;
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  if (env.empty()) env = game_sidecar::internal::EnvironmentWithout({});
  std::string local;
  return Child::Spawn(options, argv, env, nullptr, error != nullptr ? error : &local);
}

std::string FirstLine(Child& c, std::chrono::milliseconds timeout, Child::FirstLine* how) {
  std::atomic<bool> abort{false};
  std::string line;
  *how = c.WaitFirstLine(timeout, abort, &line);
  // launcher_host reports {"sidecar":"launcher_host","value":"..."}: its value, unescaped.
  const std::string mark = "{\"sidecar\":\"launcher_host\",\"value\":\"";
  if (line.compare(0, mark.size(), mark) == 0 && line.size() >= mark.size() + 2) {
    std::string value;
    for (size_t i = mark.size(); i + 1 < line.size() && !(line[i] == '"' && line[i + 1] == '}'); ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      value += line[i];
    }
    return value;
  }
  return line;
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void Tests() {
  Run("LaunchReadsTheHandshakeLineWithTheChildsOwnPid", [] {
    auto c = Launch(g_fake, {"until-eof"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    std::string line = FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    CHECK(Has(line, "\"sidecar\":\"game-sidecar\""));
    CHECK(Has(line, "\"transport\":\"tcp\""));  // the Windows sidecar's default transport
    CHECK(Has(line, "\"pid\":" + std::to_string(c->pid()) + ","));
    CHECK(line.back() != '\r');
  });
  Run("TheGivenEnvironmentReachesTheSidecarFromUtf8", [] {
    std::vector<std::string> env = {"GAME_SIDECAR_MAGIC=game-sidecar-v1", "GAME_SIDECAR_TOKEN=t0k",
                                    "FAKE_EXTRA=caf\xc3\xa9 \"quoted\""};
#ifdef _WIN32
    env.push_back("SYSTEMROOT=C:\\windows");  // the C runtime needs it to start
#endif
    auto c = Launch(g_fake, {"env"}, env);
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    c->CloseStdin();
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    // fake_sidecar.exe prints the values through the ANSI C runtime; the ASCII part must match exactly.
    CHECK(Has(c->StderrTail(), "magic=game-sidecar-v1 token=t0k extra=caf"));
    CHECK(Has(c->StderrTail(), " \"quoted\""));
  });
#ifdef _WIN32
  Run("QuotingRoundTripsThroughCommandLineToArgvW", [] {
    std::vector<std::wstring> args = {L"plain", L"two words", L"", L"a\"b", L"tail\\", L"tail\\ space\\",
                                      L"\\\\server\\share\\", L"x\\\\\"y", L"caf\u00e9 \u263a"};
    std::wstring line = L"prog.exe";
    for (const auto& a : args) line += L" " + game_sidecar::internal::QuoteArgWin(a);
    int n = 0;
    wchar_t** parsed = CommandLineToArgvW(line.c_str(), &n);
    CHECK(parsed != nullptr && n == static_cast<int>(args.size()) + 1);
    for (int i = 1; parsed != nullptr && i < n && i <= static_cast<int>(args.size()); ++i) {
      bool same = args[static_cast<size_t>(i - 1)] == parsed[i];
      if (!same) std::printf("    argument %d changed\n", i);
      CHECK(same);
    }
    LocalFree(parsed);
  });
  Run("WorkingDirectoryAndEnvironmentAreExactlyTheGivenOnes", [] {
    // A folder and a value with non-ASCII characters: UTF-8 in, UTF-16 to the system.
    std::wstring wdir = L"C:\\users\\Public\\caf\u00e9 launcher \u263a";
    CreateDirectoryW(wdir.c_str(), nullptr);
    std::string dir = game_sidecar::internal::WideToUtf8(wdir);
    std::vector<std::string> env = {"GAME_SIDECAR_TOKEN=t0k", "FAKE_EXTRA=caf\xc3\xa9 \xe2\x98\xba",
                                    "SYSTEMROOT=C:\\windows", "Path=C:\\windows\\system32"};
    ChildOptions options;
    options.working_directory = dir;
    std::string error;
    auto c = Child::Spawn(options, {g_host, "--show-cwd-env"}, env, nullptr, &error);
    CHECK(c != nullptr);
    if (!c) {
      std::printf("    %s\n", error.c_str());
      return;
    }
    Child::FirstLine how;
    std::string line = FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    CHECK(line == dir);
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    std::vector<std::string> got;
    std::string tail = c->StderrTail();
    for (size_t start = 0, end; start <= tail.size(); start = end + 1) {
      end = tail.find('\n', start);
      if (end == std::string::npos) end = tail.size();
      if (end > start) got.push_back(tail.substr(start, end - start));
    }
    // Names are case-insensitive on Windows (Wine spells SYSTEMROOT "SystemRoot").
    auto upper_name = [](std::string e) {
      size_t eq = e.find('=', 1);
      for (size_t i = 0; i < eq && i < e.size(); ++i) e[i] = static_cast<char>(std::toupper(e[i]));
      return e;
    };
    std::vector<std::string> given, extra;
    for (auto& e : env) given.push_back(upper_name(e));
    for (auto& e : got) {
      std::string u = upper_name(e);
      auto it = std::find(given.begin(), given.end(), u);
      if (it != given.end()) given.erase(it);
      // Wine adds its own WINE* entries and SystemDrive to every new process;
      // Windows adds nothing. Anything else would have leaked from the game.
      else if (u.rfind("WINE", 0) != 0 && u.rfind("SYSTEMDRIVE=", 0) != 0) extra.push_back(e);
    }
    CHECK(given.empty());  // every given entry arrived, exactly
    CHECK(extra.empty());  // and nothing of the game's environment
    for (const auto& e : given) std::printf("    missing: %s\n", e.c_str());
    for (const auto& e : extra) std::printf("    leaked: %s\n", e.c_str());
    RemoveDirectoryW(wdir.c_str());
  });
  Run("AMissingWorkingDirectoryIsASpawnError", [] {
    ChildOptions options;
    options.working_directory = "C:\\nonexistent\\state-folder";
    std::string error;
    auto c = Child::Spawn(options, {g_fake, "until-eof"}, game_sidecar::internal::EnvironmentWithout({}), nullptr,
                          &error);
    CHECK(c == nullptr);
    CHECK(Has(error, "cannot start"));
  });
  Run("AnInheritableHandleOfTheGameDoesNotReachTheSidecar", [] {
    // The "game" holds the write end of a pipe, marked inheritable. Once the game
    // closes its own copy, the read end sees the pipe broken unless the sidecar
    // inherited a copy (then it would stay open as long as the sidecar lives).
    SECURITY_ATTRIBUTES sa{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
    HANDLE r = nullptr, w = nullptr;
    CHECK(CreatePipe(&r, &w, &sa, 0));
    auto c = Launch(g_fake, {"ignore-eof"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    CloseHandle(w);
    DWORD available = 0;
    BOOL open = PeekNamedPipe(r, nullptr, 0, nullptr, &available, nullptr);
    CHECK(!open && GetLastError() == ERROR_BROKEN_PIPE);
    CloseHandle(r);
    c->Kill();
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
  });
  Run("MissingExecutableIsASpawnErrorWithTheSystemsReason", [] {
    std::string error;
    auto c = Launch("C:\\nonexistent\\game-sidecar.exe", {}, {}, &error);
    CHECK(c == nullptr);
    CHECK(Has(error, "cannot start C:\\nonexistent\\game-sidecar.exe"));
    CHECK(Has(error, "(error 3)") || Has(error, "(error 2)"));  // path / file not found
  });
#endif
  Run("SilenceTimesOutAndTheChildIsKilled", [] {
    auto c = Launch(g_fake, {"silent"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 1000ms, &how);
    CHECK(how == Child::FirstLine::kTimedOut);
    c->Kill();
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    CHECK(Has(c->StderrTail(), "loading something slow (fake)"));
  });
  Run("ExitBeforeTheHandshakeIsEofWithCodeAndStderr", [] {
    auto c = Launch(g_fake, {"exit-early"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kEof);
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    CHECK(c->status_known());
#ifdef _WIN32
    CHECK(c->wait_status() == 1);
#endif
    CHECK(Has(c->StderrTail(), "fatal: cannot load config (fake)"));
  });
#ifdef _WIN32
  Run("StateFolderLockedExitsWithCode3", [] {
    auto c = Launch(g_fake, {"locked"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kEof);
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    CHECK(c->status_known() && c->wait_status() == 3);
    CHECK(Has(c->StderrTail(), "another sidecar holds the state dir lock (fake)"));
  });
#endif
  Run("ClosingStdinEndsAWellBehavedSidecar", [] {
    auto c = Launch(g_fake, {"until-eof"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    CHECK(!c->exited());
    c->CloseStdin();
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
    CHECK(c->status_known() && c->wait_status() == 0);
    CHECK(Has(c->StderrTail(), "stdin closed, bye (fake)"));
  });
  Run("IgnoringStdinEofNeedsTerminate", [] {
    auto c = Launch(g_fake, {"ignore-eof"});
    CHECK(c != nullptr);
    if (!c) return;
    Child::FirstLine how;
    FirstLine(*c, 20s, &how);
    CHECK(how == Child::FirstLine::kGot);
    c->CloseStdin();
    CHECK(!c->WaitExited(1000ms));  // the grace passes: it ignores EOF
    c->Terminate();                 // TerminateProcess on Windows
    CHECK(c->WaitExited(20s));
    c->StopReader(5s);
  });
#ifdef _WIN32
  Run("TheSidecarEndsWhenItsHostIsKilled", [] {
    // launcher_host launches the fake through Child (its Job Object), prints
    // the fake's pid and sleeps; killing the host must close the job and end the fake.
    auto host = Launch(g_host, {g_fake});
    CHECK(host != nullptr);
    if (!host) return;
    Child::FirstLine how;
    std::string line = FirstLine(*host, 30s, &how);
    CHECK(how == Child::FirstLine::kGot);
    DWORD fake_pid = static_cast<DWORD>(std::strtoul(line.c_str(), nullptr, 10));
    CHECK(fake_pid != 0);
    HANDLE fake = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, fake_pid);
    CHECK(fake != nullptr);
    if (fake == nullptr) return;
    CHECK(WaitForSingleObject(fake, 0) == WAIT_TIMEOUT);  // alive while its host is
    host->Kill();  // TerminateProcess: the host gets no chance to clean up
    CHECK(host->WaitExited(20s));
    bool ended = WaitForSingleObject(fake, 20000) == WAIT_OBJECT_0;
    CHECK(ended);
    if (!ended) TerminateProcess(fake, 1);
    CloseHandle(fake);
    host->StopReader(5s);
  });
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: launcher_tests <fake sidecar> [launcher_host]\n");
    return 2;
  }
  g_fake = argv[1];
  g_host = argc > 2 ? argv[2] : "";
  Tests();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}
