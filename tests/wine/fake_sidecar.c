/* A stand-in sidecar for launch fault injection, as a Windows program (the C# and
 * C++ launch tests run it under Wine; fake_sidecar.sh is the same on POSIX). The
 * first argument is the mode; the modes and their output match fake_sidecar.sh.
 * Built by scripts/test_windows with mingw-w64: x86_64-w64-mingw32-gcc -O2 -o fake_sidecar.exe fake_sidecar.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static void handshake(void) {
  printf("{\"sidecar\":\"game-sidecar\",\"protocol\":1,\"transport\":\"tcp\",\"address\":\"127.0.0.1:9\","
         "\"pid\":%lu,\"version\":\"0.0.0\"}\n", (unsigned long)GetCurrentProcessId());
  fflush(stdout);
}

/* Blocks until a line or EOF arrives on stdin (the launcher closing the lifeline). */
static void read_line(void) {
  char buf[256];
  if (fgets(buf, sizeof buf, stdin) == NULL) return;
}

static const char* env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  setvbuf(stderr, NULL, _IONBF, 0);
  if (!strcmp(mode, "exit-early")) { fprintf(stderr, "fatal: cannot load config (fake)\n"); return 1; }
  if (!strcmp(mode, "locked")) {
    fprintf(stderr, "{\"level\":\"error\",\"msg\":\"another sidecar holds the state dir lock (fake)\"}\n");
    return 3;
  }
  if (!strcmp(mode, "garbage")) {
    fprintf(stderr, "warming up\n"); printf("this is not json\n"); fflush(stdout); Sleep(60000); return 0;
  }
  if (!strcmp(mode, "wrong-sidecar")) {
    printf("{\"sidecar\":\"other-tool\",\"protocol\":1,\"transport\":\"tcp\",\"address\":\"x\",\"pid\":1,\"version\":\"1\"}\n");
    fflush(stdout); Sleep(60000); return 0;
  }
  if (!strcmp(mode, "wrong-protocol")) {
    printf("{\"sidecar\":\"game-sidecar\",\"protocol\":2,\"transport\":\"tcp\",\"address\":\"x\",\"pid\":1,\"version\":\"1\"}\n");
    fflush(stdout); Sleep(60000); return 0;
  }
  if (!strcmp(mode, "log-first")) { /* stderr merged into stdout: JSON log lines, then the handshake */
    int i;
    for (i = 1; i <= 5; ++i) printf("{\"ts\": 1.0, \"level\": \"info\", \"msg\": \"starting %d\", \"logger\": \"fake\"}\n", i);
    fflush(stdout); handshake(); read_line(); return 0;
  }
  if (!strcmp(mode, "log-forever")) { /* not a sidecar: only other lines, past the bound (200) */
    int i;
    for (i = 1; i <= 300; ++i) printf("{\"ts\": 1.0, \"level\": \"info\", \"msg\": \"line %d\"}\n", i);
    fflush(stdout); Sleep(60000); return 0;
  }
  if (!strcmp(mode, "silent")) { fprintf(stderr, "loading something slow (fake)\n"); Sleep(60000); return 0; }
  if (!strcmp(mode, "env")) {
    fprintf(stderr, "magic=%s token=%s extra=%s\n", env("GAME_SIDECAR_MAGIC"), env("GAME_SIDECAR_TOKEN"), env("FAKE_EXTRA"));
    handshake(); read_line(); return 0;
  }
  if (!strcmp(mode, "until-eof")) {
    handshake(); fprintf(stderr, "serving (fake)\n"); read_line(); fprintf(stderr, "stdin closed, bye (fake)\n"); return 0;
  }
  if (!strcmp(mode, "ignore-eof")) { handshake(); Sleep(60000); return 0; }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 64;
}
