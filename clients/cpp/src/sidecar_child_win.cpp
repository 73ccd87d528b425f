// Child on Windows: CreateProcessW with three pipes and only those handles
// inherited (PROC_THREAD_ATTRIBUTE_HANDLE_LIST), the process put in a Job
// Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE before it runs (so the sidecar
// dies with the game even when the game crashes: the system closes the job
// handle with the game), one ReadFile thread per pipe, and a watcher thread
// blocked in WaitForSingleObject on the process handle.
#include "sidecar_child.h"

#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <algorithm>
#include <cwctype>

#include "spawn_win.h"

namespace game_sidecar {
namespace internal {
namespace {

void CloseIf(void** h) {
  if (*h != nullptr && *h != INVALID_HANDLE_VALUE) CloseHandle(static_cast<HANDLE>(*h));
  *h = nullptr;
}

}  // namespace

std::unique_ptr<Child> Child::Spawn(const ChildOptions& options, const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env, std::function<void()> on_exit,
                                    std::string* error) {
  std::unique_ptr<Child> c(new Child(options, std::move(on_exit)));
  SpawnedWinChild child;
  if (!SpawnWithPipesWin(argv, env, options.working_directory, &child, error)) return nullptr;
  c->pid_ = static_cast<int>(child.pid);
  c->process_ = child.process;
  c->job_ = child.job;
  c->stdin_ = child.stdin_write;
  c->stdout_ = child.stdout_read;
  c->stderr_ = child.stderr_read;
  c->out_reader_ = std::thread([p = c.get()] { p->ReadLoop(p->stdout_, true); });
  c->err_reader_ = std::thread([p = c.get()] { p->ReadLoop(p->stderr_, false); });
  c->watcher_ = std::thread([p = c.get()] { p->WatchLoop(); });
  return c;
}

Child::~Child() {
  if (process_ != nullptr && !WaitExited(std::chrono::milliseconds(0))) {
    Kill();
    WaitExited(std::chrono::milliseconds(10000));
  }
  if (watcher_.joinable()) watcher_.join();
  StopReader(std::chrono::milliseconds(500));
  for (void** h : {&stdin_, &stdout_, &stderr_, &process_, &job_, &reader_threads_[0], &reader_threads_[1]})
    CloseIf(h);
}

void Child::WatchLoop() {
  WaitForSingleObject(static_cast<HANDLE>(process_), INFINITE);
  DWORD code = 0;
  bool known = GetExitCodeProcess(static_cast<HANDLE>(process_), &code) != 0;
  OnExited(known, static_cast<int>(code));
}

void Child::CloseStdin() {
  std::lock_guard<std::mutex> lock(mu_);
  CloseIf(&stdin_);  // EOF: the sidecar's signal to shut down in order
}

void Child::Kill() {
  // The process handle stays valid after the exit, so this can never hit
  // another process; TerminateProcess on an ended one fails harmlessly.
  std::lock_guard<std::mutex> lock(mu_);
  if (!exited_ && process_ != nullptr) TerminateProcess(static_cast<HANDLE>(process_), 1);
}

void Child::Terminate() { Kill(); }

int Child::exit_code() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_ && status_known_ ? wait_status_ : -1;
}

int Child::term_signal() const { return 0; }

void Child::ReadLoop(void* pipe, bool is_stdout) {
  HANDLE self = nullptr;
  DuplicateHandle(GetCurrentProcess(), GetCurrentThread(), GetCurrentProcess(), &self, 0, FALSE,
                  DUPLICATE_SAME_ACCESS);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_threads_[is_stdout ? 0 : 1] = self;
  }
  std::string buf;
  char chunk[4096];
  for (;;) {
    DWORD got = 0;
    // Fails with ERROR_BROKEN_PIPE at EOF, ERROR_OPERATION_ABORTED when StopReader cancels it.
    if (!ReadFile(static_cast<HANDLE>(pipe), chunk, sizeof chunk, &got, nullptr) || got == 0) break;
    if (is_stdout) OnStdoutBytes(&buf, chunk, got);
    else OnStderrBytes(&buf, chunk, got);
  }
  if (is_stdout) OnStdoutEof(buf);
  else OnStderrEof(std::move(buf));
}

void Child::StopReader(std::chrono::milliseconds drain) {
  if (!out_reader_.joinable() && !err_reader_.joinable()) return;
  // A grandchild could hold the pipes open forever; drain only for a while,
  // then cancel the blocked ReadFile calls.
  if (!WaitDrained(drain)) {
    for (int attempt = 0;; ++attempt) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stdout_eof_ && stderr_eof_) break;
        for (void* t : reader_threads_)
          if (t != nullptr) CancelSynchronousIo(static_cast<HANDLE>(t));
        // Still blocked after a second of cancels: end whatever else in the job
        // holds the pipes (a grandchild), so its ends close and the reads return.
        if (attempt == 20 && job_ != nullptr) TerminateJobObject(static_cast<HANDLE>(job_), 1);
      }
      if (WaitDrained(std::chrono::milliseconds(50))) break;
    }
  }
  if (out_reader_.joinable()) out_reader_.join();
  if (err_reader_.joinable()) err_reader_.join();
}

}  // namespace internal
}  // namespace game_sidecar
