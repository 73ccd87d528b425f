// Child: spawn, the reader thread (handshake line, stderr ring), and the
// watcher thread (a blocking waitpid, so an exit is seen at once).
#include "sidecar_child.h"

#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_posix.h"

namespace game_sidecar {
namespace internal {
namespace {

// A line longer than this is cut; a handshake is ~200 bytes.
constexpr size_t kMaxLine = 64 * 1024;

std::string Truncate(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

}  // namespace

Child::Child(const SidecarOptions& options, std::function<void()> on_exit)
    : tail_lines_(options.stderr_tail_lines), on_log_(options.on_log), on_exit_(std::move(on_exit)) {}

std::unique_ptr<Child> Child::Spawn(const SidecarOptions& options, const std::vector<std::string>& argv,
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
    Signal(SIGKILL);
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
    // r < 0 (ECHILD): the game set SIGCHLD to SIG_IGN and the system reaped it; the status is lost.
    status_known_ = r == pid_;
    wait_status_ = status;
    exited_at_ = Clock::now();
  }
  cv_.notify_all();
  if (on_exit_) on_exit_();
}

bool Child::exited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_;
}

bool Child::WaitExited(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return exited_; });
}

std::string Child::SkippedBeforeHandshake() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scan_.Describe();
}

void Child::CloseStdin() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stdin_fd_ >= 0) close(stdin_fd_);  // EOF: the sidecar's signal to shut down in order
  stdin_fd_ = -1;
}

void Child::Signal(int sig) {
  // Only while not reaped: afterwards the pid may belong to another process.
  std::lock_guard<std::mutex> lock(mu_);
  if (!exited_ && pid_ > 0) kill(pid_, sig);
}

Child::FirstLine Child::WaitFirstLine(std::chrono::milliseconds timeout, const std::atomic<bool>& abort,
                                      std::string* line) {
  auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (have_line_) {
      *line = first_line_;
      return FirstLine::kGot;
    }
    if (no_handshake_) return FirstLine::kNoHandshake;
    if (stdout_eof_) return FirstLine::kEof;
    if (abort.load()) return FirstLine::kAborted;
    auto now = Clock::now();
    if (now >= deadline) return FirstLine::kTimedOut;
    cv_.wait_for(lock, std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(50)));
  }
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
        out_buf.append(buf, static_cast<size_t>(r));
        size_t nl;
        // Protocol: the handshake is the only stdout line. Anything after it is
        // a sidecar bug; it is logged rather than left to fill the pipe.
        while ((nl = out_buf.find('\n')) != std::string::npos || out_buf.size() > kMaxLine) {
          size_t cut = nl == std::string::npos ? kMaxLine : nl;
          std::string line = out_buf.substr(0, cut);
          out_buf.erase(0, nl == std::string::npos ? cut : cut + 1);
          HandshakeScan::Verdict verdict = HandshakeScan::Verdict::kHandshake;
          bool after = false;
          {
            std::lock_guard<std::mutex> lock(mu_);
            after = have_line_ || no_handshake_;
            if (!after) verdict = scan_.Offer(line);
            if (!after && verdict == HandshakeScan::Verdict::kHandshake) { have_line_ = true; first_line_ = line; }
            if (!after && verdict == HandshakeScan::Verdict::kGiveUp) no_handshake_ = true;
          }
          if (after) OnStderrLine("[stdout] " + line);
          else if (verdict == HandshakeScan::Verdict::kHandshake) cv_.notify_all();
          else OnStderrLine(line);  // stderr merged into stdout: a log line
          if (!after && verdict == HandshakeScan::Verdict::kGiveUp) cv_.notify_all();
        }
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        out_open = false;
        if (!out_buf.empty()) OnStderrLine("[stdout, unterminated] " + Truncate(out_buf, 200));
        std::lock_guard<std::mutex> lock(mu_);
        stdout_eof_ = true;
        cv_.notify_all();
      }
    }
    if (err_idx >= 0 && fds[err_idx].revents != 0) {
      ssize_t r = read(stderr_fd_, buf, sizeof buf);
      if (r > 0) {
        err_buf.append(buf, static_cast<size_t>(r));
        size_t nl;
        while ((nl = err_buf.find('\n')) != std::string::npos || err_buf.size() > kMaxLine) {
          size_t cut = nl == std::string::npos ? kMaxLine : nl;
          std::string line = err_buf.substr(0, cut);
          err_buf.erase(0, nl == std::string::npos ? cut : cut + 1);
          OnStderrLine(std::move(line));
        }
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        err_open = false;
        if (!err_buf.empty()) OnStderrLine(std::move(err_buf));
        err_buf.clear();
        std::lock_guard<std::mutex> lock(mu_);
        stderr_eof_ = true;
        cv_.notify_all();
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stdout_eof_ = stderr_eof_ = true;
  cv_.notify_all();
}

void Child::OnStderrLine(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stderr_tail_.push_back(line);
    while (stderr_tail_.size() > tail_lines_) stderr_tail_.pop_front();
  }
  if (on_log_) on_log_(line);
}

std::string Child::StderrTail(size_t lines) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t skip = lines == 0 || lines >= stderr_tail_.size() ? 0 : stderr_tail_.size() - lines;
  std::string out;
  for (size_t i = skip; i < stderr_tail_.size(); ++i) {
    if (!out.empty()) out += '\n';
    out += stderr_tail_[i];
  }
  return out;
}

bool Child::WaitDrained(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return stdout_eof_ && stderr_eof_; });
}

void Child::StopReader(std::chrono::milliseconds drain) {
  if (!reader_.joinable()) return;
  {
    // A grandchild could hold the pipes open forever; drain only for a while.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, drain, [this] { return stdout_eof_ && stderr_eof_; });
  }
  char one = 1;
  ssize_t ignored = write(wake_write_, &one, 1);
  (void)ignored;
  reader_.join();
}

}  // namespace internal
}  // namespace game_sidecar
