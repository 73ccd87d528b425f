// SidecarProcess: spawn, handshake with a timeout, stderr forwarding, orderly stop.
#include "game_sidecar/sidecar_process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_posix.h"

namespace game_sidecar {
namespace {

constexpr char kMagicEnv[] = "GAME_SIDECAR_MAGIC";
constexpr char kMagicValue[] = "game-sidecar-v1";
constexpr char kTokenEnv[] = "GAME_SIDECAR_TOKEN";
// A line longer than this is cut; a handshake is ~200 bytes.
constexpr size_t kMaxLine = 64 * 1024;
// How long a stopping reader may keep draining so the last log lines arrive.
constexpr std::chrono::milliseconds kDrain{500};

std::string Truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace

const char* LaunchErrorKindName(LaunchError::Kind kind) {
  switch (kind) {
    case LaunchError::Kind::kSpawnFailed: return "spawn failed";
    case LaunchError::Kind::kExitedBeforeHandshake: return "exited before handshake";
    case LaunchError::Kind::kTimedOut: return "timed out waiting for handshake";
    case LaunchError::Kind::kMalformedHandshake: return "malformed handshake";
    case LaunchError::Kind::kStateDirLocked: return "state dir locked by another sidecar";
  }
  return "unknown";
}

std::string LaunchError::ToString() const {
  std::string out = std::string("sidecar launch failed: ") + LaunchErrorKindName(kind);
  if (!message.empty()) out += ": " + message;
  if (!stderr_tail.empty()) out += "\n--- sidecar stderr (tail) ---\n" + stderr_tail;
  return out;
}

SidecarProcess::SidecarProcess(SidecarOptions options) : options_(std::move(options)) {}

SidecarProcess::~SidecarProcess() { Stop(); }

std::unique_ptr<SidecarProcess> SidecarProcess::Launch(SidecarOptions options, LaunchError* error) {
  std::unique_ptr<SidecarProcess> p(new SidecarProcess(std::move(options)));
  LaunchError local;
  if (!p->Start(error != nullptr ? error : &local)) return nullptr;  // p's destructor reaps
  return p;
}

bool SidecarProcess::Start(LaunchError* error) {
  token_ = options_.token.empty() ? internal::RandomHex(32) : options_.token;
  std::vector<std::string> drop = {kMagicEnv, kTokenEnv};
  for (const auto& kv : options_.env) drop.push_back(kv.first);
  std::vector<std::string> env = internal::EnvironmentWithout(drop);
  // Each key once (getenv would see only the first of two): options_.env wins,
  // except for the token, which only options_.token sets so token_ stays true.
  bool magic_given = false;
  for (const auto& kv : options_.env) {
    if (kv.first == kTokenEnv) continue;
    magic_given = magic_given || kv.first == kMagicEnv;
    env.push_back(kv.first + "=" + kv.second);
  }
  if (!magic_given) env.push_back(std::string(kMagicEnv) + "=" + kMagicValue);
  env.push_back(std::string(kTokenEnv) + "=" + token_);

  std::vector<std::string> argv = {options_.executable};
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());

  int wake[2];
  std::string pipe_error;
  if (!internal::CloexecPipe(wake, &pipe_error)) {
    *error = Fail(LaunchError::Kind::kSpawnFailed, pipe_error);
    return false;
  }
  wake_read_ = wake[0];
  wake_write_ = wake[1];

  internal::SpawnedChild child;
  std::string spawn_error;
  if (!internal::SpawnWithPipes(argv, env, options_.working_directory, &child, &spawn_error)) {
    *error = Fail(LaunchError::Kind::kSpawnFailed, spawn_error);
    return false;
  }
  pid_ = child.pid;
  stdin_fd_ = child.stdin_fd;
  stdout_fd_ = child.stdout_fd;
  stderr_fd_ = child.stderr_fd;
  reader_ = std::thread([this] { ReaderLoop(); });

  std::string line;
  {
    std::unique_lock<std::mutex> lock(mu_);
    bool done = cv_.wait_for(lock, options_.handshake_timeout, [this] { return have_line_ || stdout_eof_; });
    if (!done) {
      lock.unlock();
      *error = Fail(LaunchError::Kind::kTimedOut,
                    "no handshake within " + std::to_string(options_.handshake_timeout.count()) + " ms");
      return false;
    }
    if (!have_line_) {
      lock.unlock();
      *error = Fail(LaunchError::Kind::kExitedBeforeHandshake, "stdout closed before a handshake line");
      return false;
    }
    line = first_line_;
  }
  std::string parse_error;
  if (!ParseHandshake(line, &handshake_, &parse_error)) {
    *error = Fail(LaunchError::Kind::kMalformedHandshake, parse_error + ": " + Truncate(line, 200));
    return false;
  }
  if (options_.token.empty() && !handshake_.token.empty()) token_ = handshake_.token;
  return true;
}

LaunchError SidecarProcess::Fail(LaunchError::Kind kind, std::string message) {
  ExitInfo info = Stop();  // kills a hung or lying child; reaps one that exited
  LaunchError e;
  e.kind = kind;
  e.message = std::move(message);
  e.stderr_tail = StderrTail();
  if (kind == LaunchError::Kind::kExitedBeforeHandshake) {
    e.exit_code = info.exit_code;
    e.term_signal = info.term_signal;
    if (info.exit_code >= 0) e.message += " (exit code " + std::to_string(info.exit_code) + ")";
    if (info.term_signal > 0) e.message += " (signal " + std::to_string(info.term_signal) + ")";
    if (info.exit_code == kStateDirLockedExitCode) {
      // The one early exit a game can act on by itself (another instance of
      // the game, or a sidecar left from a crash, still holds the directory).
      e.kind = LaunchError::Kind::kStateDirLocked;
      e.message = "the sidecar exited with code 3 before its handshake: another sidecar holds the lock on its "
                  "--state-dir; stop that one or launch this one with another --state-dir";
    }
  }
  return e;
}

void SidecarProcess::ReaderLoop() {
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
    if (fds[0].revents != 0) break;  // Stop() gave up draining
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
          bool first;
          {
            std::lock_guard<std::mutex> lock(mu_);
            first = !have_line_;
            if (first) { have_line_ = true; first_line_ = line; }
          }
          if (first) cv_.notify_all();
          else OnStderrLine("[stdout] " + line);
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

void SidecarProcess::OnStderrLine(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stderr_tail_.push_back(line);
    while (stderr_tail_.size() > options_.stderr_tail_lines) stderr_tail_.pop_front();
  }
  if (options_.on_log) options_.on_log(line);
}

std::string SidecarProcess::StderrTail() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& l : stderr_tail_) {
    if (!out.empty()) out += '\n';
    out += l;
  }
  return out;
}

bool SidecarProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (reaped_ || pid_ <= 0) return true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_known_ = true;
      wait_status_ = status;
      return true;
    }
    if (r < 0 && errno != EINTR) {  // ECHILD: the game set SIGCHLD to SIG_IGN and it was auto-reaped
      reaped_ = true;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void SidecarProcess::StopReader(std::chrono::milliseconds drain) {
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

ExitInfo SidecarProcess::Stop() {
  if (stopped_) return exit_;
  stopped_ = true;
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);  // EOF: the sidecar's signal to shut down in order
    stdin_fd_ = -1;
  }
  if (pid_ > 0) {
    if (WaitExit(options_.exit_grace)) {
      exit_.how = ExitInfo::How::kExited;
    } else {
      kill(pid_, SIGTERM);
      if (WaitExit(options_.terminate_grace)) {
        exit_.how = ExitInfo::How::kTerminated;
      } else {
        kill(pid_, SIGKILL);
        WaitExit(std::chrono::milliseconds(10000));
        exit_.how = ExitInfo::How::kKilled;
      }
    }
    if (status_known_ && WIFEXITED(wait_status_)) exit_.exit_code = WEXITSTATUS(wait_status_);
    if (status_known_ && WIFSIGNALED(wait_status_)) exit_.term_signal = WTERMSIG(wait_status_);
  }
  StopReader(kDrain);
  for (int* fd : {&stdout_fd_, &stderr_fd_, &wake_read_, &wake_write_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  return exit_;
}

}  // namespace game_sidecar
