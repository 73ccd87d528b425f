// Child on POSIX: spawn (spawn_posix.cpp), one reader thread polling both
// pipes, and a watcher thread (a blocking waitpid, so an exit is seen at once).
#include "sidecar_child.h"

#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_posix.h"

namespace game_sidecar {
namespace internal {

std::unique_ptr<Child> Child::Spawn(const ChildOptions& options, const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env, std::function<void()> on_exit,
                                    std::string* error) {
  std::unique_ptr<Child> c(new Child(options, std::move(on_exit)));
  int wake[2];
  if (!CloexecPipe(wake, error)) return nullptr;
  c->wake_read_ = wake[0];
  c->wake_write_ = wake[1];
  SpawnedChild child;
  if (!SpawnWithPipes(argv, env, options.working_directory, &child, error)) return nullptr;
  c->pid_ = child.pid;
  c->stdin_fd_ = child.stdin_fd;
  c->stdout_fd_ = child.stdout_fd;
  c->stderr_fd_ = child.stderr_fd;
  c->reader_ = std::thread([p = c.get()] { p->ReaderLoop(); });
  c->watcher_ = std::thread([p = c.get()] { p->WatchLoop(); });
  return c;
}

Child::~Child() {
  if (pid_ > 0 && !WaitExited(std::chrono::milliseconds(0))) {
    Kill();
    WaitExited(std::chrono::milliseconds(10000));
  }
  if (watcher_.joinable()) watcher_.join();
  StopReader(std::chrono::milliseconds(500));
  for (int* fd : {&stdin_fd_, &stdout_fd_, &stderr_fd_, &wake_read_, &wake_write_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void Child::WatchLoop() {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  // r < 0 (ECHILD): the game set SIGCHLD to SIG_IGN and the system reaped it; the status is lost.
  OnExited(r == pid_, status);
}

void Child::CloseStdin() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stdin_fd_ >= 0) close(stdin_fd_);  // EOF: the sidecar's signal to shut down in order
  stdin_fd_ = -1;
}

namespace {

void SignalUnlessReaped(std::mutex& mu, const bool& exited, int pid, int sig) {
  // Only while not reaped: afterwards the pid may belong to another process.
  std::lock_guard<std::mutex> lock(mu);
  if (!exited && pid > 0) kill(pid, sig);
}

}  // namespace

void Child::Terminate() { SignalUnlessReaped(mu_, exited_, pid_, SIGTERM); }
void Child::Kill() { SignalUnlessReaped(mu_, exited_, pid_, SIGKILL); }

int Child::exit_code() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_ && status_known_ && WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_) : -1;
}

int Child::term_signal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_ && status_known_ && WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0;
}

void Child::ReaderLoop() {
  std::string out_buf, err_buf;
  bool out_open = true, err_open = true;
  char buf[4096];
  while (out_open || err_open) {
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {wake_read_, POLLIN, 0};
    int out_idx = -1, err_idx = -1;
    if (out_open) { out_idx = static_cast<int>(n); fds[n++] = {stdout_fd_, POLLIN, 0}; }
    if (err_open) { err_idx = static_cast<int>(n); fds[n++] = {stderr_fd_, POLLIN, 0}; }
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;  // StopReader gave up draining
    if (out_idx >= 0 && fds[out_idx].revents != 0) {
      ssize_t r = read(stdout_fd_, buf, sizeof buf);
      if (r > 0) {
        OnStdoutBytes(&out_buf, buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        out_open = false;
        OnStdoutEof(out_buf);
      }
    }
    if (err_idx >= 0 && fds[err_idx].revents != 0) {
      ssize_t r = read(stderr_fd_, buf, sizeof buf);
      if (r > 0) {
        OnStderrBytes(&err_buf, buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        err_open = false;
        OnStderrEof(std::move(err_buf));
        err_buf.clear();
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stdout_eof_ = stderr_eof_ = true;
  cv_.notify_all();
}

void Child::StopReader(std::chrono::milliseconds drain) {
  if (!reader_.joinable()) return;
  // A grandchild could hold the pipes open forever; drain only for a while.
  WaitDrained(drain);
  char one = 1;
  ssize_t ignored = write(wake_write_, &one, 1);
  (void)ignored;
  reader_.join();
}

}  // namespace internal
}  // namespace game_sidecar
