// Child, the part both platforms share: the handshake line (the first stdout
// line), the stderr ring, and the exit record. The process itself is in
// sidecar_child_posix.cpp or sidecar_child_win.cpp.
#include "sidecar_child.h"

#include <algorithm>

namespace game_sidecar {
namespace internal {
namespace {

// A line longer than this is cut; a handshake is ~200 bytes.
constexpr size_t kMaxLine = 64 * 1024;

std::string Truncate(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

// Takes the next complete line (or a kMaxLine piece) off `buf`.
bool NextLine(std::string* buf, std::string* line) {
  size_t nl = buf->find('\n');
  if (nl == std::string::npos && buf->size() <= kMaxLine) return false;
  size_t cut = nl == std::string::npos ? kMaxLine : nl;
  *line = buf->substr(0, cut);
  buf->erase(0, nl == std::string::npos ? cut : cut + 1);
  return true;
}

}  // namespace

Child::Child(const ChildOptions& options, std::function<void()> on_exit)
    : tail_lines_(options.stderr_tail_lines), on_log_(options.on_log), on_exit_(std::move(on_exit)) {}

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

void Child::OnExited(bool status_known, int status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
    status_known_ = status_known;
    wait_status_ = status;
    exited_at_ = Clock::now();
  }
  cv_.notify_all();
  if (on_exit_) on_exit_();
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

void Child::OnStdoutBytes(std::string* buf, const char* data, size_t n) {
  buf->append(data, n);
  std::string line;
  // Protocol (§1, "The handshake"): lines before the handshake (stderr merged into
  // stdout) are log lines, skipped within HandshakeScan's bound; anything after it
  // is a sidecar bug, logged rather than left to fill the pipe.
  while (NextLine(buf, &line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a Windows C runtime's text-mode stdout
    HandshakeScan::Verdict verdict = HandshakeScan::Verdict::kHandshake;
    bool after = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      after = have_line_ || no_handshake_;
      if (!after) verdict = scan_.Offer(line);
      if (!after && verdict == HandshakeScan::Verdict::kHandshake) {
        have_line_ = true;
        first_line_ = line;
      }
      if (!after && verdict == HandshakeScan::Verdict::kGiveUp) no_handshake_ = true;
    }
    if (after) OnStderrLine("[stdout] " + line);
    else if (verdict == HandshakeScan::Verdict::kHandshake) cv_.notify_all();
    else OnStderrLine(line);  // stderr merged into stdout: a log line
    if (!after && verdict == HandshakeScan::Verdict::kGiveUp) cv_.notify_all();
  }
}

void Child::OnStdoutEof(const std::string& rest) {
  if (!rest.empty()) OnStderrLine("[stdout, unterminated] " + Truncate(rest, 200));
  std::lock_guard<std::mutex> lock(mu_);
  stdout_eof_ = true;
  cv_.notify_all();
}

void Child::OnStderrBytes(std::string* buf, const char* data, size_t n) {
  buf->append(data, n);
  std::string line;
  while (NextLine(buf, &line)) OnStderrLine(std::move(line));
}

void Child::OnStderrEof(std::string rest) {
  if (!rest.empty()) OnStderrLine(std::move(rest));
  std::lock_guard<std::mutex> lock(mu_);
  stderr_eof_ = true;
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

}  // namespace internal
}  // namespace game_sidecar
