// CreateProcessW with three pipes, an explicit handle list and a kill-on-close
// Job Object (docs/unreal.md, "The launcher on Windows").
#include "spawn_win.h"

#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <algorithm>
#include <random>

namespace game_sidecar {
namespace internal {
namespace {

std::string SystemMessage(DWORD code) {
  wchar_t* text = nullptr;
  DWORD n = FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                           nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::wstring w = n > 0 && text != nullptr ? std::wstring(text, n) : std::wstring();
  if (text != nullptr) LocalFree(text);
  while (!w.empty() && (w.back() == L'\n' || w.back() == L'\r' || w.back() == L' ' || w.back() == L'.')) w.pop_back();
  return WideToUtf8(w) + " (error " + std::to_string(code) + ")";
}

void CloseAll(std::initializer_list<HANDLE> handles) {
  for (HANDLE h : handles)
    if (h != nullptr && h != INVALID_HANDLE_VALUE) CloseHandle(h);
}

// A pipe whose `child_end` (0 = read, 1 = write) is inheritable and whose other end is not.
bool ChildPipe(HANDLE ends[2], int child_end, std::string* error) {
  SECURITY_ATTRIBUTES sa{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE};
  if (!CreatePipe(&ends[0], &ends[1], &sa, 0)) {
    *error = "CreatePipe: " + SystemMessage(GetLastError());
    return false;
  }
  if (!SetHandleInformation(ends[child_end], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT)) {
    *error = "SetHandleInformation: " + SystemMessage(GetLastError());
    CloseAll({ends[0], ends[1]});
    return false;
  }
  return true;
}

}  // namespace

bool Utf8ToWide(const std::string& in, std::wstring* out) {
  out->clear();
  if (in.empty()) return true;
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, in.data(), static_cast<int>(in.size()), nullptr, 0);
  if (n <= 0) return false;
  out->resize(static_cast<size_t>(n));
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, in.data(), static_cast<int>(in.size()), &(*out)[0], n);
  return true;
}

std::string WideToUtf8(const std::wstring& in) {
  if (in.empty()) return "";
  int n = WideCharToMultiByte(CP_UTF8, 0, in.data(), static_cast<int>(in.size()), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<size_t>(std::max(n, 0)), '\0');
  if (n > 0) WideCharToMultiByte(CP_UTF8, 0, in.data(), static_cast<int>(in.size()), &out[0], n, nullptr, nullptr);
  return out;
}

std::wstring QuoteArgWin(const std::wstring& arg) {
  if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) return arg;
  // CommandLineToArgvW: 2n backslashes before a quote are n backslashes and the
  // quote ends or starts a quoted part; 2n+1 are n and a literal quote;
  // backslashes not before a quote are literal.
  std::wstring out = L"\"";
  size_t backslashes = 0;
  for (wchar_t ch : arg) {
    if (ch == L'\\') {
      ++backslashes;
      continue;
    }
    if (ch == L'"') out.append(backslashes * 2 + 1, L'\\');
    else out.append(backslashes, L'\\');
    backslashes = 0;
    out.push_back(ch);
  }
  out.append(backslashes * 2, L'\\');  // before the closing quote
  out.push_back(L'"');
  return out;
}

std::wstring EnvironmentBlock(const std::vector<std::wstring>& entries) {
  std::vector<std::wstring> sorted = entries;
  auto name = [](const std::wstring& e) {
    std::wstring n = e.substr(0, e.find(L'=', 1));  // "=C:=C:\\..." entries keep their leading '='
    for (auto& ch : n) ch = static_cast<wchar_t>(towupper(ch));
    return n;
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const std::wstring& a, const std::wstring& b) { return name(a) < name(b); });
  std::wstring block;
  for (const auto& e : sorted) {
    block += e;
    block.push_back(L'\0');
  }
  if (sorted.empty()) block.push_back(L'\0');
  block.push_back(L'\0');
  return block;
}

bool SpawnWithPipesWin(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& cwd, SpawnedWinChild* out, std::string* error) {
  if (argv.empty() || argv[0].empty()) {
    *error = "no executable given";
    return false;
  }
  std::wstring command_line, wcwd, arg;
  for (const auto& a : argv) {
    if (!Utf8ToWide(a, &arg)) {
      *error = "an argument is not valid UTF-8";
      return false;
    }
    if (!command_line.empty()) command_line.push_back(L' ');
    command_line += QuoteArgWin(arg);
  }
  std::vector<std::wstring> wenv;
  for (const auto& e : env) {
    if (!Utf8ToWide(e, &arg)) {
      *error = "an environment entry is not valid UTF-8";
      return false;
    }
    wenv.push_back(arg);
  }
  std::wstring block = EnvironmentBlock(wenv);
  if (!cwd.empty() && !Utf8ToWide(cwd, &wcwd)) {
    *error = "the working directory is not valid UTF-8";
    return false;
  }

  HANDLE in[2] = {nullptr, nullptr}, outp[2] = {nullptr, nullptr}, err[2] = {nullptr, nullptr};
  if (!ChildPipe(in, 0, error)) return false;
  if (!ChildPipe(outp, 1, error)) {
    CloseAll({in[0], in[1]});
    return false;
  }
  if (!ChildPipe(err, 1, error)) {
    CloseAll({in[0], in[1], outp[0], outp[1]});
    return false;
  }
  auto close_pipes = [&] { CloseAll({in[0], in[1], outp[0], outp[1], err[0], err[1]}); };

  // Only these three are inherited, even if the game has inheritable handles of its own.
  HANDLE inherit[3] = {in[0], outp[1], err[1]};
  SIZE_T attr_size = 0;
  InitializeProcThreadAttributeList(nullptr, 1, 0, &attr_size);
  std::vector<char> attr_buf(attr_size);
  auto* attrs = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attr_buf.data());
  if (!InitializeProcThreadAttributeList(attrs, 1, 0, &attr_size) ||
      !UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit, sizeof inherit, nullptr,
                                 nullptr)) {
    *error = "the handle list: " + SystemMessage(GetLastError());
    close_pipes();
    return false;
  }

  HANDLE job = CreateJobObjectW(nullptr, nullptr);
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (job == nullptr || !SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
    *error = "the Job Object: " + SystemMessage(GetLastError());
    DeleteProcThreadAttributeList(attrs);
    CloseAll({job});
    close_pipes();
    return false;
  }

  STARTUPINFOEXW si{};
  si.StartupInfo.cb = sizeof si;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = in[0];
  si.StartupInfo.hStdOutput = outp[1];
  si.StartupInfo.hStdError = err[1];
  si.lpAttributeList = attrs;
  PROCESS_INFORMATION pi{};
  // Suspended until it is in the job, so not even a grandchild can escape it.
  DWORD flags = EXTENDED_STARTUPINFO_PRESENT | CREATE_UNICODE_ENVIRONMENT | CREATE_NO_WINDOW | CREATE_SUSPENDED;
  BOOL ok = CreateProcessW(nullptr, &command_line[0], nullptr, nullptr, TRUE, flags, &block[0],
                           wcwd.empty() ? nullptr : wcwd.c_str(), &si.StartupInfo, &pi);
  DWORD create_error = GetLastError();
  DeleteProcThreadAttributeList(attrs);
  CloseAll({in[0], outp[1], err[1]});  // the child's ends
  if (!ok) {
    CloseAll({in[1], outp[0], err[0], job});
    *error = "cannot start " + argv[0] + ": " + SystemMessage(create_error);
    return false;
  }
  if (!AssignProcessToJobObject(job, pi.hProcess)) {
    DWORD e = GetLastError();
    TerminateProcess(pi.hProcess, 1);
    CloseAll({pi.hThread, pi.hProcess, in[1], outp[0], err[0], job});
    *error = "cannot put " + argv[0] + " in its Job Object: " + SystemMessage(e);
    return false;
  }
  ResumeThread(pi.hThread);
  CloseHandle(pi.hThread);
  out->pid = pi.dwProcessId;
  out->process = pi.hProcess;
  out->job = job;
  out->stdin_write = in[1];
  out->stdout_read = outp[0];
  out->stderr_read = err[0];
  return true;
}

std::string RandomHex(size_t n) {
  std::random_device rd;  // rand_s on Windows: the system's CSPRNG
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < n; ++i) {
    unsigned c = rd() & 0xff;
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 15]);
  }
  return hex;
}

std::vector<std::string> EnvironmentWithout(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  wchar_t* block = GetEnvironmentStringsW();
  for (const wchar_t* e = block; e != nullptr && *e != L'\0'; e += wcslen(e) + 1) {
    std::string entry = WideToUtf8(e);
    if (entry.empty() || entry[0] == '=') {  // the per-drive "=C:=C:\..." entries
      out.push_back(std::move(entry));
      continue;
    }
    std::string key = entry.substr(0, entry.find('='));
    bool skip = false;
    for (const auto& k : keys) skip = skip || _stricmp(key.c_str(), k.c_str()) == 0;  // names are case-insensitive
    if (!skip) out.push_back(std::move(entry));
  }
  if (block != nullptr) FreeEnvironmentStringsW(block);
  return out;
}

}  // namespace internal
}  // namespace game_sidecar
