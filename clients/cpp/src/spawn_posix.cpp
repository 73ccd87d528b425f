// vfork + execve with O_CLOEXEC pipes, close-from-3 and an error pipe that
// carries the exec's errno back. Not posix_spawn: its chdir and closefrom file
// actions are glibc extensions (2.29 and 2.34) that would raise the glibc floor
// of every game linking this (docs/unreal.md, "glibc"); this needs glibc 2.17.
// vfork (not fork) because a game process is large and multi-threaded: fork
// would copy its page tables. The child shares our memory until execve, so it
// runs only async-signal-safe calls on data prepared before the vfork.
#include "spawn_posix.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <random>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__linux__) && !defined(SYS_close_range)
#define SYS_close_range 436  // Linux 5.9, one number on every architecture; older kernel headers lack it
#endif

extern char** environ;

namespace game_sidecar {
namespace internal {
// A pipe whose both ends are close-on-exec and not 0/1/2 (a host that closed its
// own stdio would otherwise get a pipe end there, and dup2 onto the same number
// would keep the close-on-exec flag and lose the descriptor at exec).
bool CloexecPipe(int fds[2], std::string* error) {
#if defined(__APPLE__)
  // No pipe2 on macOS; the window before FD_CLOEXEC is covered by
  // POSIX_SPAWN_CLOEXEC_DEFAULT for our own spawns.
  if (pipe(fds) != 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
#else
  if (pipe2(fds, O_CLOEXEC) != 0) {
#endif
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > 2) continue;
    int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    if (moved < 0) {
      *error = std::string("fcntl: ") + std::strerror(errno);
      close(fds[0]);
      close(fds[1]);
      return false;
    }
    close(fds[i]);
    fds[i] = moved;
  }
  return true;
}

namespace {

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

// What the child reports through the error pipe when it cannot exec.
struct ChildFailure {
  int stage;  // kStage*
  int err;    // errno
};
constexpr int kStageDup = 1, kStageChdir = 2, kStageExec = 3;

// Everything the child needs, made before the vfork (no allocation after it).
struct ChildPlan {
  int in_read, out_write, err_write, report;  // report: the error pipe's write end
  const char* cwd;                            // nullptr = ours
  std::vector<const char*> candidates;        // execve targets, in PATH order
  char* const* argv;
  char* const* envp;
  long max_fd;                                // sysconf(_SC_OPEN_MAX), for kernels without close_range
};

// Signals the sidecar must start with at their default action, whatever the
// game did with them (SIGTERM must stop it; its own handlers must work).
constexpr int kDefaultSignals[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};

// Closes every descriptor from `from` up to `to` (inclusive) in the child.
void CloseRange(int from, long to, long max_fd) {
  if (from > to) return;
#if defined(__linux__)
  if (syscall(SYS_close_range, static_cast<unsigned>(from), static_cast<unsigned>(to), 0u) == 0) return;
#endif
  long last = to < max_fd ? to : max_fd - 1;
  for (long fd = from; fd <= last; ++fd) close(static_cast<int>(fd));
}

[[noreturn]] void Fail(const ChildPlan& plan, int stage, int err) {
  ChildFailure f{stage, err};
  ssize_t ignored = write(plan.report, &f, sizeof f);
  (void)ignored;
  _exit(127);
}

// Runs in the vforked child: async-signal-safe calls only, nothing allocated.
[[noreturn]] void ChildExec(const ChildPlan& plan) {
  // A handler of the game's must not run here (this child shares the game's
  // memory); every handled signal goes back to its default before unblocking.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa;
    if (sigaction(sig, nullptr, &sa) != 0) continue;  // a number libc reserves
    bool force = false;
    for (int d : kDefaultSignals) force = force || d == sig;
    if (force || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)) {
      std::memset(&sa, 0, sizeof sa);
      sa.sa_handler = SIG_DFL;
      sigaction(sig, &sa, nullptr);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // dup2 clears close-on-exec on 0, 1 and 2; the pipes are all above 2.
  if (dup2(plan.in_read, 0) < 0 || dup2(plan.out_write, 1) < 0 || dup2(plan.err_write, 2) < 0)
    Fail(plan, kStageDup, errno);
  if (plan.cwd != nullptr && chdir(plan.cwd) != 0) Fail(plan, kStageChdir, errno);
  // Everything above 2 goes, the game's descriptors without O_CLOEXEC too,
  // except the error pipe, which is close-on-exec.
  CloseRange(3, plan.report - 1, plan.max_fd);
  CloseRange(plan.report + 1, ~0u >> 1, plan.max_fd);
  // As execvp: a candidate that exists but cannot run (EACCES) is remembered
  // while later ones are tried; ENOENT and ENOTDIR move on.
  int err = ENOENT;
  for (const char* path : plan.candidates) {
    execve(path, plan.argv, plan.envp);
    if (errno == EACCES) err = EACCES;
    else if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  Fail(plan, kStageExec, err);
}

// The paths execvp would try for `file`, from the game's PATH.
std::vector<std::string> Candidates(const std::string& file) {
  if (file.find('/') != std::string::npos) return {file};
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + file);  // an empty entry is the current folder
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

}  // namespace

bool SpawnWithPipes(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    const std::string& cwd, SpawnedChild* out, std::string* error) {
  if (argv.empty() || argv[0].empty()) {
    *error = "no executable given";
    return false;
  }
  int in[2] = {-1, -1}, outp[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  if (!CloexecPipe(in, error)) return false;
  if (!CloexecPipe(outp, error)) {
    CloseAll({in[0], in[1]});
    return false;
  }
  if (!CloexecPipe(err, error)) {
    CloseAll({in[0], in[1], outp[0], outp[1]});
    return false;
  }
  if (!CloexecPipe(report, error)) {
    CloseAll({in[0], in[1], outp[0], outp[1], err[0], err[1]});
    return false;
  }

  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  std::vector<std::string> candidates = Candidates(argv[0]);
  ChildPlan plan;
  plan.in_read = in[0];
  plan.out_write = outp[1];
  plan.err_write = err[1];
  plan.report = report[1];
  plan.cwd = cwd.empty() ? nullptr : cwd.c_str();
  for (const auto& c : candidates) plan.candidates.push_back(c.c_str());
  plan.argv = cargv.data();
  plan.envp = cenv.data();
  plan.max_fd = sysconf(_SC_OPEN_MAX);
  if (plan.max_fd < 0) plan.max_fd = 1024;

  // All signals blocked across the vfork, so none is handled in the child
  // before it has reset the game's handlers; ours are restored right after.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
#if defined(__APPLE__)
  pid_t pid = fork();  // vfork is deprecated in the macOS SDK; the child code is the same
#else
  pid_t pid = vfork();
#endif
  if (pid == 0) ChildExec(plan);
  int vfork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  CloseAll({in[0], outp[1], err[1], report[1]});  // the child's ends
  if (pid < 0) {
    CloseAll({in[1], outp[0], err[0], report[0]});
    *error = "cannot start " + argv[0] + ": vfork: " + std::strerror(vfork_errno);
    return false;
  }
  // EOF (the write end closed by a successful execve) or the child's failure.
  ChildFailure failure{0, 0};
  ssize_t got;
  do {
    got = read(report[0], &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    CloseAll({in[1], outp[0], err[0]});
    const char* what = failure.stage == kStageChdir ? ": working directory " : ": ";
    *error = "cannot start " + argv[0] + what + (failure.stage == kStageChdir ? cwd + ": " : "") +
             std::strerror(failure.err);
    return false;
  }
  out->pid = pid;
  out->stdin_fd = in[1];
  out->stdout_fd = outp[0];
  out->stderr_fd = err[0];
  return true;
}

std::string RandomHex(size_t n) {
  std::string bytes(n, '\0');
  size_t got = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    while (got < n) {
      ssize_t r = read(fd, &bytes[got], n - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    close(fd);
  }
  if (got < n) {  // no /dev/urandom (a chroot?): the library's CSPRNG source instead
    std::random_device rd;
    for (; got < n; ++got) bytes[got] = static_cast<char>(rd());
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned char c : bytes) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 15]);
  }
  return hex;
}

std::vector<std::string> EnvironmentWithout(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool skip = false;
    for (const auto& k : keys) skip = skip || key == k;
    if (!skip) out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace internal
}  // namespace game_sidecar
