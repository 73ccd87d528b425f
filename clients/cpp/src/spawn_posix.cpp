// posix_spawn with O_CLOEXEC pipes and close-from-3 in the child. posix_spawn
// (not fork) because a game process is large and multi-threaded: fork would copy
// page tables and could deadlock on locks held by other threads before exec.
#include "spawn_posix.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <spawn.h>
#include <unistd.h>

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

}  // namespace

bool SpawnWithPipes(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    const std::string& cwd, SpawnedChild* out, std::string* error) {
  if (argv.empty()) {
    *error = "no executable given";
    return false;
  }
  int in[2] = {-1, -1}, outp[2] = {-1, -1}, err[2] = {-1, -1};
  if (!CloexecPipe(in, error)) return false;
  if (!CloexecPipe(outp, error)) {
    CloseAll({in[0], in[1]});
    return false;
  }
  if (!CloexecPipe(err, error)) {
    CloseAll({in[0], in[1], outp[0], outp[1]});
    return false;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, outp[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#if defined(__APPLE__)
  flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;  // only the dup2'd descriptors survive
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // host fds without O_CLOEXEC too
#endif
  posix_spawnattr_setflags(&attr, flags);
  // The game may block or ignore signals (SIGPIPE, SIGINT...); the sidecar must
  // start with defaults so SIGTERM stops it and its own handlers work.
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseAll({in[0], outp[1], err[1]});  // the child's ends
  if (rc != 0) {
    CloseAll({in[1], outp[0], err[0]});
    *error = "cannot start " + argv[0] + ": " + std::strerror(rc);
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
