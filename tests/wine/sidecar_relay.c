/* The real sidecar as a Windows program, for the Windows clients' tests under Wine.
 *
 * A Windows program under Wine cannot usefully start a Linux one (no handle, no pid,
 * no pipes), and Windows CPython (hence a Windows sidecar) is not to be had here. So
 * the launcher under test starts this program the way a game starts the sidecar; it
 * asks tests/wine/relay_host.py, a Linux process listening on 127.0.0.1 (port in
 * GAME_SIDECAR_RELAY_PORT), to start the real Linux sidecar with the same arguments
 * and GAME_SIDECAR_* variables, and relays the three pipes both ways. What the
 * launcher sees is what a Windows sidecar gives it:
 *   - stdout: the handshake line, with "pid" this process's pid (the handle the
 *     launcher holds); no --listen given means TCP loopback, the Windows default;
 *   - stderr: the sidecar's log lines;
 *   - stdin: closing it (the lifeline) closes the sidecar's stdin;
 *   - --parent-pid P: watched here through a process handle (P is a Windows pid),
 *     the sidecar's stdin closed when P exits, as the Windows parent watch does;
 *   - the exit code is the sidecar's (128 + N when a signal N ended it); this
 *     process killed (TerminateProcess) means the sidecar is killed (SIGKILL).
 * Absolute Windows paths in arguments and variables (C:\..., Z:\...) are turned
 * into the Unix paths Wine maps them to.
 *
 * Frames both ways: one type byte, a 4-byte big-endian length, the bytes.
 *   to the host:   'p' this process's Windows pid (decimal text), 'a' argument, 'v' KEY=VALUE,
 *                  'g' start, 'i' stdin bytes, 'c' stdin closed
 *   from the host: 'o' stdout bytes, 'e' stderr bytes, 'x' exit code (decimal text)
 * Built by scripts/test_windows: x86_64-w64-mingw32-gcc -O2 -o sidecar_relay.exe sidecar_relay.c -lws2_32 */
#include <winsock2.h>
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static SOCKET sock = INVALID_SOCKET;
static CRITICAL_SECTION send_lock;

static int send_all(const char* p, int n) {
  while (n > 0) {
    int k = send(sock, p, n, 0);
    if (k <= 0) return 0;
    p += k; n -= k;
  }
  return 1;
}

static int send_frame(char type, const char* data, unsigned len) {
  unsigned char head[5] = {(unsigned char)type, (unsigned char)(len >> 24), (unsigned char)(len >> 16),
                           (unsigned char)(len >> 8), (unsigned char)len};
  EnterCriticalSection(&send_lock);
  int ok = send_all((const char*)head, 5) && send_all(data, (int)len);
  LeaveCriticalSection(&send_lock);
  return ok;
}

static int recv_all(char* p, int n) {
  while (n > 0) {
    int k = recv(sock, p, n, 0);
    if (k <= 0) return 0;
    p += k; n -= k;
  }
  return 1;
}

/* "C:\x\y" -> "/root/.wine/drive_c/x/y" through Wine's own mapping; NULL when not a path. */
static char* unix_path(const char* text) {
  typedef char*(CDECL * to_unix_fn)(LPCWSTR);
  static to_unix_fn to_unix = NULL;
  if (!(((text[0] | 32) >= 'a' && (text[0] | 32) <= 'z') && text[1] == ':' && (text[2] == '\\' || text[2] == '/')))
    return NULL;
  if (!to_unix) to_unix = (to_unix_fn)(void*)GetProcAddress(GetModuleHandleA("kernel32.dll"), "wine_get_unix_file_name");
  if (!to_unix) return NULL;
  /* Wine maps a path whose folders exist; a state folder the sidecar is to make may not
     yet. Map the longest existing prefix and append the rest with '/' separators. */
  char head[MAX_PATH * 4];
  size_t n = strlen(text);
  if (n >= sizeof head) return NULL;
  memcpy(head, text, n + 1);
  size_t cut = n;
  for (;;) {
    WCHAR wide[MAX_PATH * 4];
    head[cut] = 0;
    if (MultiByteToWideChar(CP_UTF8, 0, head, -1, wide, MAX_PATH * 4) &&
        (cut <= 3 || GetFileAttributesW(wide) != INVALID_FILE_ATTRIBUTES)) {
      char* root = to_unix(wide);
      if (!root) return NULL;
      if (cut == n) return root;
      size_t rn = strlen(root);
      char* out = HeapAlloc(GetProcessHeap(), 0, rn + (n - cut) + 2);
      memcpy(out, root, rn);
      size_t o = rn;
      if (o > 0 && out[o - 1] != '/') out[o++] = '/';
      for (size_t i = cut; i < n; i++) {
        char c = text[i] == '\\' ? '/' : text[i];
        if (c == '/' && o > 0 && out[o - 1] == '/') continue;
        out[o++] = c;
      }
      out[o] = 0;
      HeapFree(GetProcessHeap(), 0, root);
      return out;
    }
    while (cut > 3 && text[cut - 1] != '\\' && text[cut - 1] != '/') cut--;  /* drop the last part */
    if (cut > 3) cut--;                                                      /* and its separator */
    else cut = 3;
  }
}

/* Sends `text` as a frame, with a Windows path in it (whole, or after "NAME=") mapped. */
static void send_mapped(char type, const char* text) {
  const char* eq = type == 'v' || strncmp(text, "--", 2) == 0 ? strchr(text, '=') : NULL;
  const char* value = eq ? eq + 1 : text;
  char* mapped = unix_path(value);
  if (!mapped) { send_frame(type, text, (unsigned)strlen(text)); return; }
  size_t head = (size_t)(value - text), n = head + strlen(mapped);
  char* joined = malloc(n + 1);
  memcpy(joined, text, head);
  strcpy(joined + head, mapped);
  send_frame(type, joined, (unsigned)n);
  free(joined);
  HeapFree(GetProcessHeap(), 0, mapped);
}

static DWORD WINAPI pump_stdin(LPVOID unused) {
  (void)unused;
  char buf[4096];
  DWORD n;
  HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
  while (ReadFile(in, buf, sizeof buf, &n, NULL) && n > 0) send_frame('i', buf, n);
  send_frame('c', "", 0);
  return 0;
}

static DWORD WINAPI watch_parent(LPVOID pid) {
  HANDLE parent = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)(UINT_PTR)pid);
  if (parent) {
    WaitForSingleObject(parent, INFINITE);
    CloseHandle(parent);
  }
  send_frame('c', "", 0);
  return 0;
}

/* Writes stdout bytes, putting this process's pid into the handshake line. */
static void write_stdout(const char* data, DWORD n) {
  static char line[8192];
  static DWORD have = 0;
  static int passed = 0;
  HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
  DWORD w;
  if (passed) { WriteFile(out, data, n, &w, NULL); return; }
  for (DWORD i = 0; i < n; i++) {
    if (have < sizeof line - 64) line[have++] = data[i];
    if (data[i] != '\n') continue;
    line[have] = 0;
    char* pid = strstr(line, "\"pid\":");
    if (pid) {
      char* end = pid + 6;
      while (*end >= '0' && *end <= '9') end++;
      char rest[8192];
      strcpy(rest, end);
      sprintf(pid + 6, "%lu%s", (unsigned long)GetCurrentProcessId(), rest);
    }
    WriteFile(out, line, (DWORD)strlen(line), &w, NULL);
    passed = 1;
    if (i + 1 < n) WriteFile(out, data + i + 1, n - i - 1, &w, NULL);
    return;
  }
}

int main(int argc, char** argv) {
  const char* port = getenv("GAME_SIDECAR_RELAY_PORT");
  if (!port || !*port) {
    fprintf(stderr, "sidecar_relay: GAME_SIDECAR_RELAY_PORT is not set (scripts/test_windows starts the host)\n");
    return 70;
  }
  WSADATA wsa;
  WSAStartup(MAKEWORD(2, 2), &wsa);
  InitializeCriticalSection(&send_lock);
  sock = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)atoi(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(sock, (struct sockaddr*)&addr, sizeof addr) != 0) {
    fprintf(stderr, "sidecar_relay: cannot reach the relay host on 127.0.0.1:%s\n", port);
    return 70;
  }
  /* The host files the sidecar under this pid, so a test can ask it to signal "the
   * process with Windows pid P" (relay_host.py's 's' control frame: SIGSTOP, which
   * Windows has no word for). */
  char self[16];
  int self_len = sprintf(self, "%lu", (unsigned long)GetCurrentProcessId());
  send_frame('p', self, (unsigned)self_len);
  DWORD parent_pid = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--parent-pid") && i + 1 < argc) { parent_pid = (DWORD)strtoul(argv[++i], NULL, 10); continue; }
    send_mapped('a', argv[i]);
  }
  LPCH block = GetEnvironmentStringsA();
  for (LPCH v = block; *v; v += strlen(v) + 1)
    if (!strncmp(v, "GAME_SIDECAR_", 13) && strncmp(v, "GAME_SIDECAR_RELAY_", 19)) send_mapped('v', v);
  FreeEnvironmentStringsA(block);
  send_frame('g', "", 0);
  CreateThread(NULL, 0, pump_stdin, NULL, 0, NULL);
  if (parent_pid) CreateThread(NULL, 0, watch_parent, (LPVOID)(UINT_PTR)parent_pid, 0, NULL);
  for (;;) {
    unsigned char head[5];
    if (!recv_all((char*)head, 5)) return 71;  /* the host went away */
    unsigned len = ((unsigned)head[1] << 24) | ((unsigned)head[2] << 16) | ((unsigned)head[3] << 8) | head[4];
    char* data = malloc(len + 1);
    if (!recv_all(data, (int)len)) return 71;
    data[len] = 0;
    DWORD w;
    if (head[0] == 'o') write_stdout(data, len);
    else if (head[0] == 'e') WriteFile(GetStdHandle(STD_ERROR_HANDLE), data, len, &w, NULL);
    else if (head[0] == 'x') { int code = atoi(data); free(data); ExitProcess((UINT)code); }
    free(data);
  }
}
