/* The C ABI from plain C99 against the real sidecar (scripted model):
 *   capi_c_test <game-sidecar> <sidecar_test.toml> <fake sidecar> [<python> <stalling_sidecar.py>]
 * The fake sidecar is tests/fake_sidecar.sh on POSIX, tests/wine/fake_sidecar.exe
 * on Windows. GAME_SIDECAR_EXE in the environment overrides the first argument.
 *
 * A "game thread" loop drains the object's events; every result of a
 * non-blocking call must arrive there, through the callback of its own call.
 * The same program runs on Windows (the hosted-runner workflow's win64-library
 * job); what differs is in the three helpers below. */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L /* kill, pthread_self, mkdtemp */
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game_sidecar_c.h"

#ifdef _WIN32
#include <windows.h>
typedef DWORD thread_id;
static thread_id this_thread(void) { return GetCurrentThreadId(); }
static int same_thread(thread_id a, thread_id b) { return a == b; }
/* What a crash looks like to the launcher: the process ends at once, no clean-up. */
static int kill_hard(int pid) {
  HANDLE h = OpenProcess(PROCESS_TERMINATE, FALSE, (DWORD)pid);
  BOOL ok;
  if (h == NULL) return -1;
  ok = TerminateProcess(h, 137);
  CloseHandle(h);
  return ok ? 0 : -1;
}
/* How the exit event reports it: Windows has no signals, the code is the one given above. */
#define KILLED_EXIT_JSON "{\"exitCode\":137,\"signal\":null,"
#else
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
typedef pthread_t thread_id;
static thread_id this_thread(void) { return pthread_self(); }
static int same_thread(thread_id a, thread_id b) { return pthread_equal(a, b); }
static int kill_hard(int pid) { return kill((pid_t)pid, SIGKILL); }
#define KILLED_EXIT_JSON "{\"exitCode\":null,\"signal\":9,"
#endif

static int failures = 0;
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                            \
      return;                                                                \
    }                                                                        \
  } while (0)

/* What one call's callback saw. */
typedef struct call_log {
  uint64_t handle;         /* what the *_async call returned */
  int events;              /* callbacks received */
  int wrong_handle;        /* events carrying another call's handle */
  int done;                /* a final event arrived */
  int code;
  char reason[64];
  char json[2048];
  int64_t revision;
  /* runs */
  char text[1024];
  int sentences;
  int texts;
  uint64_t last_seq;
  int out_of_order;
  int run_kind_last;
  int cancel_on_first_text; /* cancel from inside the callback */
  game_sidecar_host* gs;
  int finished_at;          /* its place among all finished calls and runs (1, 2, ...) */
} call_log;

static int finished = 0; /* calls and runs finished so far, in the order the drain delivered them */

static void copy(char* dst, size_t cap, const char* src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void record_result(call_log* log, const game_sidecar_result* r) {
  log->code = game_sidecar_result_code(r);
  if (log->code != GAME_SIDECAR_OK && getenv("CAPI_TEST_VERBOSE") != NULL) {
    fprintf(stderr, "result %d %s: %s\n", log->code, game_sidecar_result_reason(r), game_sidecar_result_message(r));
  }
  copy(log->reason, sizeof log->reason, game_sidecar_result_reason(r));
  copy(log->json, sizeof log->json, game_sidecar_result_json(r));
  log->revision = game_sidecar_result_revision(r);
}

static void on_done(const game_sidecar_event* e, void* user_data) {
  call_log* log = (call_log*)user_data;
  log->events++;
  if (e->handle != log->handle) log->wrong_handle++;
  if (e->result) record_result(log, e->result);
  log->done = 1;
  log->finished_at = ++finished;
}

static void on_run(const game_sidecar_event* e, void* user_data) {
  call_log* log = (call_log*)user_data;
  if (getenv("CAPI_TEST_VERBOSE") != NULL) {
    fprintf(stderr, "run %llu: kind %d seq %llu %s\n", (unsigned long long)e->handle, e->run_kind,
            (unsigned long long)e->seq, e->text);
  }
  log->events++;
  if (e->kind != GAME_SIDECAR_EVENT_RUN || e->handle != log->handle) log->wrong_handle++;
  log->run_kind_last = e->run_kind;
  if (e->run_kind != GAME_SIDECAR_RUN_ERROR) {
    if (e->seq <= log->last_seq) log->out_of_order++;
    log->last_seq = e->seq;
  }
  if (e->run_kind == GAME_SIDECAR_RUN_TEXT) {
    size_t have = strlen(log->text);
    if (have + strlen(e->text) < sizeof log->text) strcat(log->text, e->text);
    log->texts++;
    if (e->sentence_end) log->sentences++;
    if (log->cancel_on_first_text && log->texts == 1) {
      if (game_sidecar_run_cancel(log->gs, e->handle) != GAME_SIDECAR_OK) log->wrong_handle++;
    }
  }
  if (e->run_kind == GAME_SIDECAR_RUN_FINISHED || e->run_kind == GAME_SIDECAR_RUN_ERROR) {
    if (e->result) record_result(log, e->result);
    log->done = 1;
    log->finished_at = ++finished;
  }
}

static void on_log(const game_sidecar_event* e, void* user_data) {
  (void)user_data;
  if (e->kind != GAME_SIDECAR_EVENT_LOG) failures++;
  if (getenv("CAPI_TEST_VERBOSE") != NULL) fprintf(stderr, "sidecar: %s\n", e->text);
}

/* The game loop: drain, and between frames wait for work (a real game would
 * render instead). Gives up after about 60 s. */
static int pump_until(game_sidecar_host* gs, const int* flag) {
  int frames;
  for (frames = 0; frames < 1200 && !*flag; ++frames) {
    game_sidecar_drain(gs, 0);
    if (!*flag) game_sidecar_wait_event(gs, 50);
  }
  return *flag;
}

static void test_utf16_offsets(void) {
  /* "é" is 2 UTF-8 bytes / 1 UTF-16 unit; "😀" 4 bytes / 2 units. */
  const char* s = "h\xc3\xa9llo \xf0\x9f\x98\x80 x";
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 0) == 0);
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 3) == 2);
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 7) == 6);
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 11) == 8);
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 13) == 10);
  CHECK(game_sidecar_utf16_offset(s, strlen(s), 99) == 10);
}

static void test_batch_rejects_bad_ops(void) {
  game_sidecar_batch* b = game_sidecar_batch_create();
  CHECK(game_sidecar_batch_upsert_entity(b, "guard", "DRAGONKIND", "Guard", "", "") == GAME_SIDECAR_INVALID_ARGUMENT);
  CHECK(game_sidecar_batch_upsert_entity(b, "", "CHARACTER", "Guard", "", "") == GAME_SIDECAR_INVALID_ARGUMENT);
  CHECK(game_sidecar_batch_add_json(b, "{\"noSuchOp\": {}}") == GAME_SIDECAR_INVALID_ARGUMENT);
  CHECK(game_sidecar_batch_size(b) == 0);
  CHECK(game_sidecar_batch_upsert_entity(b, "guard", "CHARACTER", "Guard", "a tired guard", NULL) == GAME_SIDECAR_OK);
  CHECK(game_sidecar_batch_add_json(b, "{\"setSceneFact\": {\"key\": \"weather\", \"value\": {\"stringValue\": \"rain\"}}}") == GAME_SIDECAR_OK);
  CHECK(game_sidecar_batch_size(b) == 2);
  game_sidecar_batch_free(b);
}

/* Without a sidecar, calls fail through the drain (not at the call), in the
 * order they were made, and a drain hands out at most `max` events. */
static void test_drain_order_and_bound(void) {
  game_sidecar_host* gs = game_sidecar_create();
  call_log first, second;
  size_t n;
  int rounds = 0;
  memset(&first, 0, sizeof first);
  memset(&second, 0, sizeof second);
  first.handle = game_sidecar_call_async(gs, "GetInfo", NULL, on_done, &first);
  second.handle = game_sidecar_call_async(gs, "GetInfo", NULL, on_done, &second);
  CHECK(first.handle != second.handle);
  while (!second.done && rounds++ < 200) {
    n = game_sidecar_drain(gs, 1);
    CHECK(n <= 1);
    CHECK(!second.done || first.done); /* first in, first out */
    if (!second.done) game_sidecar_wait_event(gs, 50);
  }
  CHECK(first.done && second.done && first.events == 1 && second.events == 1);
  CHECK(first.wrong_handle == 0 && second.wrong_handle == 0);
  CHECK(first.code == GAME_SIDECAR_FAILED_PRECONDITION && second.code == GAME_SIDECAR_FAILED_PRECONDITION);
  game_sidecar_destroy(gs);
}

/* A launch whose child never prints a handshake: launch_async must return
 * before the handshake timeout, with nothing in the drain, and the failure
 * must arrive later through the drain. */
static void test_launch_async_does_not_block(const char* fake) {
  game_sidecar_host* gs = game_sidecar_create();
  const char* args[] = {"silent"};
  game_sidecar_launch_options o;
  call_log log;
  memset(&o, 0, sizeof o);
  memset(&log, 0, sizeof log);
  o.struct_size = sizeof o;
  o.executable = fake;
  o.args = args;
  o.arg_count = 1;
  o.handshake_timeout_ms = 2000;
  o.terminate_grace_ms = 500;
  log.handle = game_sidecar_launch_async(gs, &o, on_done, &log);
  CHECK(log.handle != 0);
  CHECK(game_sidecar_drain(gs, 0) == 0); /* a blocking launch would have queued its result already */
  CHECK(log.events == 0);
  CHECK(pump_until(gs, &log.done));
  CHECK(log.events == 1 && log.wrong_handle == 0);
  CHECK(log.code == GAME_SIDECAR_UNAVAILABLE);
  CHECK(strcmp(log.reason, "HANDSHAKE_TIMEOUT") == 0);
  game_sidecar_destroy(gs);
}

static void test_real_sidecar(const char* exe, const char* config) {
  game_sidecar_host* gs = game_sidecar_create();
  const char* args[] = {"serve", "--config", config};
  game_sidecar_launch_options o;
  call_log launched, opened, applied, stale, bad, run1, run2, cancelled, stopped;
  game_sidecar_batch* b;
  game_sidecar_result* r;
  game_sidecar_run_request rq;
  const char* expected = "The gate creaks open. A cold wind rushes in! Nobody speaks.";

  memset(&o, 0, sizeof o);
  memset(&launched, 0, sizeof launched);
  memset(&opened, 0, sizeof opened);
  memset(&applied, 0, sizeof applied);
  memset(&stale, 0, sizeof stale);
  memset(&bad, 0, sizeof bad);
  memset(&run1, 0, sizeof run1);
  memset(&run2, 0, sizeof run2);
  memset(&cancelled, 0, sizeof cancelled);
  memset(&stopped, 0, sizeof stopped);
  o.struct_size = sizeof o;
  o.executable = exe;
  o.args = args;
  o.arg_count = 3;
  o.on_log = on_log;

  /* Launch, open, apply and narrate, all queued at once without waiting: the
   * worker runs them in order, the game only drains. */
  launched.handle = game_sidecar_launch_async(gs, &o, on_done, &launched);
  opened.handle = game_sidecar_call_async(gs, "OpenSession", "{\"sessionId\": \"c-slot\"}", on_done, &opened);
  b = game_sidecar_batch_create();
  CHECK(game_sidecar_batch_upsert_entity(b, "guard", "CHARACTER", "Guard", "a tired guard", NULL) == 0);
  CHECK(game_sidecar_batch_record_event(b, "The bell rings twice.", "guard", NULL) == 0);
  CHECK(game_sidecar_batch_set_scene_fact(b, "weather", "rain") == 0);
  applied.handle = game_sidecar_apply_async(gs, "c-slot", 0, "c-delta-1", b, on_done, &applied);
  game_sidecar_batch_free(b); /* copied: freeing it at once is allowed */
  memset(&rq, 0, sizeof rq);
  rq.struct_size = sizeof rq;
  rq.input = GAME_SIDECAR_INPUT_NARRATE;
  rq.session_id = "c-slot";
  rq.text = "The gate opens.";
  run1.handle = game_sidecar_run_start(gs, &rq, on_run, &run1);
  run2.handle = game_sidecar_run_start(gs, &rq, on_run, &run2);
  CHECK(strncmp(game_sidecar_run_id(gs, run1.handle), "run-", 4) == 0); /* known before it starts */
  CHECK(launched.events == 0 && opened.events == 0 && applied.events == 0 && run1.events == 0);

  CHECK(pump_until(gs, &run1.done) && pump_until(gs, &run2.done));
  CHECK(launched.events == 1 && launched.code == GAME_SIDECAR_OK && strstr(launched.json, "\"pid\":") != NULL);
  CHECK(game_sidecar_pid(gs) > 0);
  CHECK(opened.events == 1 && opened.code == GAME_SIDECAR_OK && opened.revision == 0);
  CHECK(strstr(opened.json, "\"created\":true") != NULL);
  CHECK(applied.events == 1 && applied.code == GAME_SIDECAR_OK && applied.revision == 1);
  /* Routing: each run's callback got only its own events, the whole reply, in order. */
  CHECK(run1.wrong_handle == 0 && run2.wrong_handle == 0 && launched.wrong_handle == 0);
  CHECK(opened.wrong_handle == 0 && applied.wrong_handle == 0);
  if (run1.run_kind_last != GAME_SIDECAR_RUN_FINISHED || run2.run_kind_last != GAME_SIDECAR_RUN_FINISHED) {
    fprintf(stderr, "run1: kind %d code %d %s; run2: kind %d code %d %s\n", run1.run_kind_last, run1.code,
            run1.reason, run2.run_kind_last, run2.code, run2.reason);
  }
  CHECK(run1.run_kind_last == GAME_SIDECAR_RUN_FINISHED && run2.run_kind_last == GAME_SIDECAR_RUN_FINISHED);
  CHECK(strcmp(run1.text, expected) == 0 && strcmp(run2.text, expected) == 0);
  CHECK(run1.sentences == 3 && run1.out_of_order == 0 && run2.out_of_order == 0);
  /* The final event was drained: the handle is released. */
  CHECK(game_sidecar_run_cancel(gs, run1.handle) == GAME_SIDECAR_NOT_FOUND);

  /* Blocking forms. */
  r = game_sidecar_call(gs, "GetState", "{\"sessionId\": \"c-slot\"}");
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK && game_sidecar_result_revision(r) == 1);
  CHECK(strstr(game_sidecar_result_json(r), "\"guard\"") != NULL);
  game_sidecar_result_free(r);
  r = game_sidecar_call(gs, "GetState", "{\"sessionId\": 7, \"nope\": 1}");
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_INVALID_ARGUMENT);
  CHECK(strcmp(game_sidecar_result_reason(r), "INVALID_REQUEST") == 0);
  game_sidecar_result_free(r);
  r = game_sidecar_call(gs, "DropTables", "");
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_INVALID_ARGUMENT);
  game_sidecar_result_free(r);

  /* A stale batch, non-blocking: the sidecar's reason and metadata come through. */
  b = game_sidecar_batch_create();
  CHECK(game_sidecar_batch_remove_entity(b, "guard") == 0);
  stale.handle = game_sidecar_apply_async(gs, "c-slot", 0 + 5, NULL, b, on_done, &stale);
  bad.handle = game_sidecar_call_async(gs, "OpenSession", "{not json", on_done, &bad);
  game_sidecar_batch_free(b);
  CHECK(pump_until(gs, &stale.done) && pump_until(gs, &bad.done));
  CHECK(stale.code == GAME_SIDECAR_ABORTED && strcmp(stale.reason, "STALE_REVISION") == 0);
  CHECK(bad.code == GAME_SIDECAR_INVALID_ARGUMENT && bad.wrong_handle == 0 && stale.wrong_handle == 0);
  r = game_sidecar_call(gs, "GetState", "{\"sessionId\": \"c-slot\"}");
  CHECK(game_sidecar_result_revision(r) == 1 && strstr(game_sidecar_result_json(r), "\"guard\"") != NULL);
  game_sidecar_result_free(r);

  /* Cancel from inside the run's callback at its first text. */
  rq.profile = "slow";
  cancelled.gs = gs;
  cancelled.cancel_on_first_text = 1;
  cancelled.handle = game_sidecar_run_start(gs, &rq, on_run, &cancelled);
  CHECK(pump_until(gs, &cancelled.done));
  CHECK(cancelled.run_kind_last == GAME_SIDECAR_RUN_ERROR && cancelled.wrong_handle == 0);
  CHECK(cancelled.code == GAME_SIDECAR_CANCELLED && strcmp(cancelled.reason, "RUN_CANCELLED") == 0);
  CHECK(strlen(cancelled.text) < strlen("One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten."));

  /* A run with a bad request ends with RUN_ERROR through the drain. */
  memset(&run1, 0, sizeof run1);
  rq.input = 99;
  run1.handle = game_sidecar_run_start(gs, &rq, on_run, &run1);
  CHECK(pump_until(gs, &run1.done) && run1.code == GAME_SIDECAR_INVALID_ARGUMENT && run1.events == 1);

  /* Stop without blocking: the orderly exit arrives through the drain. */
  stopped.handle = game_sidecar_stop_async(gs, on_done, &stopped);
  CHECK(pump_until(gs, &stopped.done));
  CHECK(strstr(stopped.json, "\"how\":\"exited\"") != NULL && strstr(stopped.json, "\"exitCode\":0") != NULL);
  CHECK(game_sidecar_pid(gs) == 0);
  r = game_sidecar_call(gs, "GetInfo", NULL);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_FAILED_PRECONDITION);
  game_sidecar_result_free(r);
  game_sidecar_destroy(gs);
}

/* What the lifecycle callback saw (STATUS and EXIT events). */
typedef struct life_log {
  thread_id game_thread;
  int wrong_thread;   /* a callback ran on another thread than the draining one */
  int wrong_kind;
  int exits;
  int requested_exits;
  char last_exit[2048];
  int statuses[16];
  int status_count;
  int ready_seen;     /* STATUS READY arrived */
  int final_seen;     /* STATUS FAILED or STOPPED arrived */
} life_log;

static void on_life(const game_sidecar_event* e, void* user_data) {
  life_log* log = (life_log*)user_data;
  if (!same_thread(this_thread(), log->game_thread)) log->wrong_thread++;
  if (getenv("CAPI_TEST_VERBOSE") != NULL) fprintf(stderr, "life: kind %d status %d %s\n", e->kind, e->status, e->event_json);
  if (e->kind == GAME_SIDECAR_EVENT_EXIT) {
    log->exits++;
    if (strstr(e->event_json, "\"requested\":true") != NULL) log->requested_exits++;
    copy(log->last_exit, sizeof log->last_exit, e->event_json);
  } else if (e->kind == GAME_SIDECAR_EVENT_STATUS) {
    if (log->status_count < 16) log->statuses[log->status_count++] = e->status;
    if (e->status == GAME_SIDECAR_STATUS_READY) log->ready_seen = 1;
    if (e->status == GAME_SIDECAR_STATUS_FAILED || e->status == GAME_SIDECAR_STATUS_STOPPED) log->final_seen = 1;
  } else {
    log->wrong_kind++;
  }
}

/* Crash recovery through the drain: a sidecar killed with SIGKILL is reported
 * as an EXIT and a STATUS event on the draining thread; with a restart policy
 * READY comes back and calls reach the new process; without one (an older
 * game's smaller options struct) the status is FAILED. */
static void test_exit_and_restart(const char* exe, const char* config) {
  game_sidecar_host* gs = game_sidecar_create();
  const char* args[] = {"serve", "--config", config};
  game_sidecar_launch_options o;
  life_log life;
  call_log stopped;
  game_sidecar_result* r;
  int pid1, pid2;

  memset(&o, 0, sizeof o);
  memset(&life, 0, sizeof life);
  memset(&stopped, 0, sizeof stopped);
  life.game_thread = this_thread();
  o.struct_size = sizeof o;
  o.executable = exe;
  o.args = args;
  o.arg_count = 3;
  o.restart_max = 2;
  o.restart_backoff_initial_ms = 50;
  game_sidecar_set_lifecycle_callback(gs, on_life, &life);
  CHECK(game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_NONE);
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  CHECK(game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_READY);
  pid1 = game_sidecar_pid(gs);
  CHECK(pid1 > 0);
  CHECK(kill_hard(pid1) == 0);
  CHECK(pump_until(gs, &life.ready_seen));
  CHECK(life.wrong_thread == 0 && life.wrong_kind == 0);
  CHECK(life.exits == 1 && life.requested_exits == 0);
  CHECK(strstr(life.last_exit, KILLED_EXIT_JSON) != NULL);
  CHECK(strstr(life.last_exit, "\"hung\":false") != NULL && strstr(life.last_exit, "\"description\":\"") != NULL);
  CHECK(strstr(life.last_exit, "\"stderrTail\":") != NULL);
  CHECK(life.status_count == 2 && life.statuses[0] == GAME_SIDECAR_STATUS_RESTARTING &&
        life.statuses[1] == GAME_SIDECAR_STATUS_READY);
  pid2 = game_sidecar_pid(gs);
  CHECK(pid2 > 0 && pid2 != pid1);
  CHECK(game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_READY);
  r = game_sidecar_call(gs, "GetInfo", NULL);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK); /* the new process answers */
  game_sidecar_result_free(r);
  /* A stop the game asked for: EXIT requested, then STATUS STOPPED. */
  stopped.handle = game_sidecar_stop_async(gs, on_done, &stopped);
  CHECK(pump_until(gs, &stopped.done) && pump_until(gs, &life.final_seen));
  CHECK(life.exits == 2 && life.requested_exits == 1 && life.wrong_thread == 0);
  CHECK(life.statuses[life.status_count - 1] == GAME_SIDECAR_STATUS_STOPPED);
  game_sidecar_destroy(gs);

  /* No policy: a game built before the restart fields passes the older size. */
  gs = game_sidecar_create();
  memset(&life, 0, sizeof life);
  life.game_thread = this_thread();
  o.struct_size = offsetof(game_sidecar_launch_options, restart_max);
  o.restart_max = 99; /* beyond struct_size: must not be read */
  game_sidecar_set_lifecycle_callback(gs, on_life, &life);
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  pid1 = game_sidecar_pid(gs);
  CHECK(kill_hard(pid1) == 0);
  CHECK(pump_until(gs, &life.final_seen));
  CHECK(life.exits == 1 && life.requested_exits == 0 && life.wrong_thread == 0 && life.wrong_kind == 0);
  CHECK(life.status_count == 1 && life.statuses[0] == GAME_SIDECAR_STATUS_FAILED);
  CHECK(strstr(life.last_exit, KILLED_EXIT_JSON) != NULL);
  CHECK(game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_FAILED);
  r = game_sidecar_call(gs, "GetInfo", NULL);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_UNAVAILABLE && strcmp(game_sidecar_result_reason(r), "SIDECAR_GONE") == 0);
  game_sidecar_result_free(r);
  /* FAILED is over: a launch starts a new process, with no stop needed first (issue 32). */
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  CHECK(game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_READY);
  pid2 = game_sidecar_pid(gs);
  CHECK(pid2 > 0 && pid2 != pid1);
  r = game_sidecar_call(gs, "GetInfo", NULL);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  /* A live one is still refused. */
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_FAILED_PRECONDITION);
  game_sidecar_result_free(r);
  game_sidecar_destroy(gs);
}

/* game_sidecar_release: the game thread hands the object over and goes on; the
 * orderly stop (here of a hung sidecar: the graces run out, then SIGKILL)
 * finishes on the library's thread, which game_sidecar_wait_released joins. */
static void test_release_does_not_wait(const char* exe, const char* config) {
  game_sidecar_host* gs = game_sidecar_create();
  const char* args[] = {"serve", "--config", config};
  game_sidecar_launch_options o;
  game_sidecar_result* r;
  int pid;

  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.executable = exe;
  o.args = args;
  o.arg_count = 3;
  o.exit_grace_ms = 400;
  o.terminate_grace_ms = 400;
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  pid = game_sidecar_pid(gs);
  CHECK(pid > 0);
  CHECK(game_sidecar_wait_released(0) == 0);
#ifndef _WIN32
  CHECK(kill((pid_t)pid, SIGSTOP) == 0); /* hung: deaf to stdin's end and to SIGTERM */
  game_sidecar_release(gs);
  /* Returned with the stop still to do: a blocking destroy would have waited the graces out. */
  CHECK(kill((pid_t)pid, 0) == 0);
  CHECK(game_sidecar_wait_released(0) == 1);
  CHECK(game_sidecar_wait_released(30000) == 0);
  CHECK(kill((pid_t)pid, 0) == -1); /* killed and reaped */
#else
  game_sidecar_release(gs);
  CHECK(game_sidecar_wait_released(30000) == 0);
#endif
  game_sidecar_release(NULL);
  CHECK(game_sidecar_wait_released(0) == 0);
}

#ifndef _WIN32
/* What WRITE_SETTLED events said, in order. */
typedef struct settled_log {
  int events;
  int wrong_kind;
  char last[2048];
} settled_log;

static void on_settled(const game_sidecar_event* e, void* user_data) {
  settled_log* log = (settled_log*)user_data;
  if (e->kind != GAME_SIDECAR_EVENT_WRITE_SETTLED) log->wrong_kind++;
  log->events++;
  copy(log->last, sizeof log->last, e->event_json);
}

/* Tracked sessions through a crash: the library keeps the revision, and a write
 * made while the sidecar restarts is kept and sent once it is back, never dropped
 * (docs/protocol.md §1, "Tracked writes across a restart"). */
static void test_tracked_writes_survive_a_crash(const char* exe, const char* config) {
  char state_dir[] = "/tmp/capi-tracked-XXXXXX";
  const char* args[] = {"serve", "--config", config, "--state-dir", state_dir};
  game_sidecar_host* gs;
  game_sidecar_launch_options o;
  call_log opened, first, second, during, untracked;
  settled_log settled;
  game_sidecar_batch* b;
  game_sidecar_result* r;
  int pid;

  CHECK(mkdtemp(state_dir) != NULL);
  gs = game_sidecar_create();
  memset(&o, 0, sizeof o);
  memset(&opened, 0, sizeof opened);
  memset(&first, 0, sizeof first);
  memset(&second, 0, sizeof second);
  memset(&during, 0, sizeof during);
  memset(&untracked, 0, sizeof untracked);
  memset(&settled, 0, sizeof settled);
  o.struct_size = sizeof o;
  o.executable = exe;
  o.args = args;
  o.arg_count = 5;
  o.restart_max = 2;
  o.restart_backoff_initial_ms = 50;
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  CHECK(game_sidecar_tracked_revision(gs, "t-slot") == -1);
  opened.handle = game_sidecar_track_async(gs, "t-slot", NULL, on_settled, &settled, on_done, &opened);
  b = game_sidecar_batch_create();
  CHECK(game_sidecar_batch_upsert_entity(b, "guard", "CHARACTER", "Guard", "a tired guard", NULL) == 0);
  /* No base revision to carry: each batch goes on top of the last acknowledged one. */
  first.handle = game_sidecar_tracked_apply_async(gs, "t-slot", NULL, b, on_done, &first);
  second.handle = game_sidecar_tracked_apply_async(gs, "t-slot", "second", b, on_done, &second);
  untracked.handle = game_sidecar_tracked_apply_async(gs, "other-slot", NULL, b, on_done, &untracked);
  CHECK(pump_until(gs, &second.done) && pump_until(gs, &untracked.done));
  CHECK(opened.code == GAME_SIDECAR_OK && opened.revision == 0);
  CHECK(first.code == GAME_SIDECAR_OK && first.revision == 1);
  CHECK(second.code == GAME_SIDECAR_OK && second.revision == 2);
  CHECK(game_sidecar_tracked_revision(gs, "t-slot") == 2);
  CHECK(untracked.code == GAME_SIDECAR_FAILED_PRECONDITION);

  /* A crash, and a write right behind it: kept, then sent by the restart. */
  pid = game_sidecar_pid(gs);
  CHECK(kill_hard(pid) == 0);
  while (game_sidecar_get_status(gs) == GAME_SIDECAR_STATUS_READY) game_sidecar_wait_event(gs, 1);
  CHECK(game_sidecar_batch_set_field(b, "guard", "mood", "wary") == 0);
  during.handle = game_sidecar_tracked_apply_async(gs, "t-slot", "during", b, on_done, &during);
  game_sidecar_batch_free(b);
  CHECK(pump_until(gs, &during.done));
  if (during.code != GAME_SIDECAR_OK) {
    CHECK(during.code == GAME_SIDECAR_UNAVAILABLE && strcmp(during.reason, "WRITE_KEPT") == 0);
    CHECK(pump_until(gs, &settled.events));
    CHECK(settled.wrong_kind == 0 && strstr(settled.last, "\"resumed\":true") != NULL);
    CHECK(strstr(settled.last, "\"deltaId\":\"during\",\"outcome\":\"applied_now\",\"revision\":3") != NULL ||
          strstr(settled.last, "\"pendingDeltaId\":\"during\"") != NULL);
  }
  while (game_sidecar_get_status(gs) != GAME_SIDECAR_STATUS_READY) game_sidecar_wait_event(gs, 10);
  CHECK(game_sidecar_tracked_revision(gs, "t-slot") == 3);
  CHECK(game_sidecar_tracked_held_count(gs, "t-slot") == 0);
  r = game_sidecar_call(gs, "GetState", "{\"sessionId\": \"t-slot\"}");
  CHECK(game_sidecar_result_revision(r) == 3 && strstr(game_sidecar_result_json(r), "wary") != NULL);
  game_sidecar_result_free(r);
  /* A resync (a loaded save): the tracked revision follows it. */
  memset(&opened, 0, sizeof opened);
  opened.handle = game_sidecar_tracked_replace_state_async(
      gs, "t-slot", "{\"snapshot\": {\"entities\": [{\"id\": \"cat\", \"kind\": \"ENTITY_KIND_CHARACTER\", \"name\": \"Cat\"}]}}",
      on_done, &opened);
  CHECK(pump_until(gs, &opened.done));
  CHECK(opened.code == GAME_SIDECAR_OK && opened.revision == 4);
  CHECK(game_sidecar_tracked_revision(gs, "t-slot") == 4);
  game_sidecar_destroy(gs);
}
#endif

/* Per-session lanes: a call stuck on one session holds up nothing of another's,
 * while order holds within a session and around a stop. The sidecar is the real one
 * with ApplyDeltas on "stalled-*" sessions answering after 3 s
 * (tests/fakes/stalling_sidecar.py, run by the venv's python). */
static void test_sessions_do_not_wait(const char* python, const char* stalling, const char* config) {
  game_sidecar_host* gs = game_sidecar_create();
  const char* args[] = {stalling, "serve", "--config", config};
  game_sidecar_launch_options o;
  call_log stuck, free_apply, free_run, after_stuck, stuck2, stopped;
  game_sidecar_batch* b;
  game_sidecar_result* r;
  game_sidecar_run_request rq;

  memset(&o, 0, sizeof o);
  memset(&stuck, 0, sizeof stuck);
  memset(&free_apply, 0, sizeof free_apply);
  memset(&free_run, 0, sizeof free_run);
  memset(&after_stuck, 0, sizeof after_stuck);
  memset(&stuck2, 0, sizeof stuck2);
  memset(&stopped, 0, sizeof stopped);
  o.struct_size = sizeof o;
  o.executable = python;
  o.args = args;
  o.arg_count = 4;
  r = game_sidecar_launch(gs, &o);
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  r = game_sidecar_call(gs, "OpenSession", "{\"sessionId\": \"stalled-1\"}");
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);
  r = game_sidecar_call(gs, "OpenSession", "{\"sessionId\": \"free-1\"}");
  CHECK(game_sidecar_result_code(r) == GAME_SIDECAR_OK);
  game_sidecar_result_free(r);

  b = game_sidecar_batch_create();
  CHECK(game_sidecar_batch_upsert_entity(b, "guard", "CHARACTER", "Guard", "a tired guard", NULL) == 0);
  finished = 0;
  stuck.handle = game_sidecar_apply_async(gs, "stalled-1", 0, NULL, b, on_done, &stuck);
  /* Behind it on its own session: answered after it, and sees its write. */
  after_stuck.handle = game_sidecar_call_async(gs, "GetState", "{\"sessionId\": \"stalled-1\"}", on_done, &after_stuck);
  /* Another session's write and run: not behind the stuck call. */
  free_apply.handle = game_sidecar_apply_async(gs, "free-1", 0, NULL, b, on_done, &free_apply);
  memset(&rq, 0, sizeof rq);
  rq.struct_size = sizeof rq;
  rq.input = GAME_SIDECAR_INPUT_NARRATE;
  rq.session_id = "free-1";
  rq.text = "The gate opens.";
  free_run.handle = game_sidecar_run_start(gs, &rq, on_run, &free_run);
  CHECK(pump_until(gs, &free_run.done));
  CHECK(free_apply.code == GAME_SIDECAR_OK && free_apply.revision == 1);
  CHECK(free_run.run_kind_last == GAME_SIDECAR_RUN_FINISHED);
  CHECK(!stuck.done); /* 3 s to go: the other session did not wait for it */
  CHECK(pump_until(gs, &after_stuck.done));
  CHECK(stuck.code == GAME_SIDECAR_OK && stuck.revision == 1);
  CHECK(stuck.finished_at > free_run.finished_at && after_stuck.finished_at == stuck.finished_at + 1);
  CHECK(after_stuck.code == GAME_SIDECAR_OK && after_stuck.revision == 1);

  /* A stop waits for the calls submitted before it, stuck or not. */
  stuck2.handle = game_sidecar_apply_async(gs, "stalled-1", 1, NULL, b, on_done, &stuck2);
  stopped.handle = game_sidecar_stop_async(gs, on_done, &stopped);
  game_sidecar_batch_free(b);
  CHECK(pump_until(gs, &stopped.done));
  CHECK(stuck2.done && stuck2.code == GAME_SIDECAR_OK && stuck2.revision == 2);
  CHECK(stuck2.finished_at < stopped.finished_at);
  game_sidecar_destroy(gs);
}

int main(int argc, char** argv) {
  const char* exe = getenv("GAME_SIDECAR_EXE");
  if (argc < 4) {
    fprintf(stderr, "usage: %s <game-sidecar> <config.toml> <fake sidecar> [<python> <stalling_sidecar.py>]\n", argv[0]);
    return 2;
  }
  if (exe == NULL || *exe == '\0') exe = argv[1];
  if (game_sidecar_abi_version() != GAME_SIDECAR_C_ABI_VERSION) {
    fprintf(stderr, "ABI version mismatch\n");
    return 1;
  }
  test_utf16_offsets();
  test_batch_rejects_bad_ops();
  test_drain_order_and_bound();
  test_launch_async_does_not_block(argv[3]);
  test_real_sidecar(exe, argv[2]);
  test_exit_and_restart(exe, argv[2]);
  test_release_does_not_wait(exe, argv[2]);
#ifndef _WIN32
  test_tracked_writes_survive_a_crash(exe, argv[2]);
#endif
  if (argc >= 6) {
    test_sessions_do_not_wait(argv[4], argv[5], argv[2]);
  } else {
    printf("capi: per-session lanes not tested (no python and stalling_sidecar.py given)\n");
  }
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi: all checks passed\n");
  return 0;
}
