/* game_sidecar_c.h: the sidecar client as a plain C ABI (libgame_sidecar).
 *
 * One `game_sidecar_host` object owns one sidecar process, its connection and an
 * event queue. Every result that does not come back by return value arrives
 * through game_sidecar_drain(), which the game thread calls once per frame:
 * callbacks run there, on the draining thread, never anywhere else.
 *
 * Routing is per call: each non-blocking call and each run takes its own
 * callback and user data, and gets a handle (a nonzero uint64) that its events
 * carry. Nothing is filtered by run ID on the game's side.
 *
 * Blocking forms (game_sidecar_launch, game_sidecar_call, ...) wait for the
 * sidecar: use them from tools, tests or worker threads. The *_async forms
 * return at once, and their result is queued for the drain. Their work keeps
 * the order submitted within a session (an OpenSession, then an ApplyDeltas,
 * then a run start of one session queue behind each other) and around a launch
 * or a stop (which wait for everything submitted before them, and everything
 * submitted after them waits for them); each session has a lane of its own, so
 * a call stuck on one session never holds up another session's calls and runs.
 * Calls that name no session (GetInfo, CancelRun) share one lane; an
 * ImportSession whose session_id is empty (the blob's is used) waits for every
 * lane, and every lane waits for it.
 *
 * Requests and responses of the unary calls are proto3 JSON (the mapping of
 * the .proto files in proto/sidecar/v1: {"sessionId": "slot-1"}); the common delta ops and
 * runs also have typed forms. Strings are UTF-8 and NUL-terminated. Pointers in
 * an event are valid only during the callback that receives it.
 *
 * Thread safety: every function may be called from any thread, except that
 * game_sidecar_drain must not run on two threads at once, and
 * game_sidecar_destroy must be the last call on an object (not from a callback).
 *
 * ABI: only functions and types named game_sidecar_* are exported. Structs
 * passed in start with `struct_size` (set it to sizeof the struct) so fields
 * can be added later without breaking a game built against this header.
 */
#ifndef GAME_SIDECAR_C_H
#define GAME_SIDECAR_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(GAME_SIDECAR_C_BUILD)
#    define GAME_SIDECAR_API __declspec(dllexport)
#  else
#    define GAME_SIDECAR_API __declspec(dllimport)
#  endif
#elif defined(GAME_SIDECAR_C_BUILD)
#  define GAME_SIDECAR_API __attribute__((visibility("default")))
#else
#  define GAME_SIDECAR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's ABI; game_sidecar_abi_version() returns the library's. */
#define GAME_SIDECAR_C_ABI_VERSION 1

typedef struct game_sidecar_host game_sidecar_host;
typedef struct game_sidecar_result game_sidecar_result;
typedef struct game_sidecar_batch game_sidecar_batch;

/* ---- Results: a status (gRPC code + the sidecar's stable reason) and a body ---- */

/* gRPC's status codes and numbers. */
enum {
  GAME_SIDECAR_OK = 0,
  GAME_SIDECAR_CANCELLED = 1,
  GAME_SIDECAR_UNKNOWN = 2,
  GAME_SIDECAR_INVALID_ARGUMENT = 3,
  GAME_SIDECAR_DEADLINE_EXCEEDED = 4,
  GAME_SIDECAR_NOT_FOUND = 5,
  GAME_SIDECAR_ALREADY_EXISTS = 6,
  GAME_SIDECAR_PERMISSION_DENIED = 7,
  GAME_SIDECAR_RESOURCE_EXHAUSTED = 8,
  GAME_SIDECAR_FAILED_PRECONDITION = 9,
  GAME_SIDECAR_ABORTED = 10,
  GAME_SIDECAR_OUT_OF_RANGE = 11,
  GAME_SIDECAR_UNIMPLEMENTED = 12,
  GAME_SIDECAR_INTERNAL = 13,
  GAME_SIDECAR_UNAVAILABLE = 14,
  GAME_SIDECAR_DATA_LOSS = 15,
  GAME_SIDECAR_UNAUTHENTICATED = 16
};

/* 0 (GAME_SIDECAR_OK) or a gRPC code. */
GAME_SIDECAR_API int game_sidecar_result_code(const game_sidecar_result* r);
/* The ErrorReason name without prefix ("STALE_REVISION"); "" when none. For a
 * failed launch: the LaunchError kind ("SPAWN_FAILED", "EXITED_BEFORE_HANDSHAKE",
 * "HANDSHAKE_TIMEOUT", "MALFORMED_HANDSHAKE", "STATE_DIR_LOCKED"). */
GAME_SIDECAR_API const char* game_sidecar_result_reason(const game_sidecar_result* r);
GAME_SIDECAR_API const char* game_sidecar_result_message(const game_sidecar_result* r);
/* The ErrorInfo metadata as a JSON object ({"current_revision": "7"}), "{}" when none. */
GAME_SIDECAR_API const char* game_sidecar_result_metadata_json(const game_sidecar_result* r);
/* The body as JSON: a unary call's response, a launch's handshake, a stop's exit
 * ({"how": "exited", "exitCode": 0, "signal": 0}); "" on error. */
GAME_SIDECAR_API const char* game_sidecar_result_json(const game_sidecar_result* r);
/* The `revision` of an OpenSession, ApplyDeltas, ReplaceState, GetState,
 * ExportSession or ImportSession response; -1 for any other result or an error. */
GAME_SIDECAR_API int64_t game_sidecar_result_revision(const game_sidecar_result* r);
/* A failed launch's last stderr lines; "" otherwise. */
GAME_SIDECAR_API const char* game_sidecar_result_stderr_tail(const game_sidecar_result* r);
/* Frees a result returned by a blocking call (never one from an event). NULL is fine. */
GAME_SIDECAR_API void game_sidecar_result_free(game_sidecar_result* r);

/* ---- Events, handed out by game_sidecar_drain ---- */

typedef enum game_sidecar_event_kind {
  GAME_SIDECAR_EVENT_LAUNCHED = 1,  /* game_sidecar_launch_async finished: result ok, or the launch error */
  GAME_SIDECAR_EVENT_CALL_DONE = 2, /* a non-blocking unary call finished: result */
  GAME_SIDECAR_EVENT_RUN = 3,       /* a run's event: run_kind and the run fields */
  GAME_SIDECAR_EVENT_LOG = 4,       /* a stderr line of the sidecar (JSON log line): text */
  GAME_SIDECAR_EVENT_STOPPED = 5,   /* game_sidecar_stop_async finished: result json = the exit */
  /* Crash recovery (docs/protocol.md §1, "When the sidecar exits"), to the
   * callback of game_sidecar_set_lifecycle_callback: */
  GAME_SIDECAR_EVENT_STATUS = 16,   /* the process status changed: status, event_json {"status": "ready"} */
  GAME_SIDECAR_EVENT_EXIT = 17,     /* a sidecar process ended: event_json = the exit record (below) */
  /* To the on_settled callback of game_sidecar_track_async: */
  GAME_SIDECAR_EVENT_WRITE_SETTLED = 18 /* kept writes of a tracked session settled: event_json (below) */
} game_sidecar_event_kind;

/* The life of the launched sidecar (SidecarStatus of the C++ API). */
typedef enum game_sidecar_status {
  GAME_SIDECAR_STATUS_NONE = -1,      /* nothing launched (or a game_sidecar_connect target) */
  GAME_SIDECAR_STATUS_STARTING = 0,
  GAME_SIDECAR_STATUS_READY = 1,      /* a process serves */
  GAME_SIDECAR_STATUS_RESTARTING = 2, /* between an unexpected exit and the next handshake (restart policy) */
  GAME_SIDECAR_STATUS_STOPPED = 3,    /* after a stop the game asked for */
  GAME_SIDECAR_STATUS_FAILED = 4      /* it ended unasked with no restart left (or no policy) */
} game_sidecar_status;

typedef enum game_sidecar_run_kind {
  GAME_SIDECAR_RUN_STARTED = 0,
  GAME_SIDECAR_RUN_TEXT = 1,             /* text, sentence_end, mentions */
  GAME_SIDECAR_RUN_ATTEMPT_REJECTED = 2, /* a decision reply was void; another attempt follows */
  GAME_SIDECAR_RUN_ACTION = 3,           /* action_id: the chosen action (engine ID) */
  GAME_SIDECAR_RUN_NOTES = 4,
  GAME_SIDECAR_RUN_USAGE = 5,
  GAME_SIDECAR_RUN_FINISHED = 6,         /* the last event of a good run */
  GAME_SIDECAR_RUN_ERROR = 7             /* the last event of a failed run: result */
} game_sidecar_run_kind;

/* An entity named in a text delta. start/length are UTF-8 bytes into `text`
 * (the wire's unit); start_utf16/length_utf16 are UTF-16 code units, the
 * indices of the same span in an FString / C# string made from `text`. */
typedef struct game_sidecar_mention {
  const char* entity_id;
  int32_t start;
  int32_t length;
  int32_t start_utf16;
  int32_t length_utf16;
} game_sidecar_mention;

typedef struct game_sidecar_event {
  int kind;                 /* game_sidecar_event_kind */
  uint64_t handle;          /* the call or run this event belongs to (0 for LOG) */
  const game_sidecar_result* result; /* LAUNCHED, CALL_DONE, STOPPED, RUN_ERROR; else NULL */
  /* RUN only */
  int run_kind;             /* game_sidecar_run_kind */
  const char* run_id;
  uint64_t seq;             /* the sidecar's sequence number (0 for RUN_ERROR) */
  const char* text;         /* RUN_TEXT: the delta; LOG: the line; else "" */
  int sentence_end;         /* RUN_TEXT: 1 when the delta ends a sentence */
  const game_sidecar_mention* mentions;
  size_t mention_count;
  const char* action_id;    /* RUN_ACTION; else "" */
  const char* event_json;   /* RUN (not ERROR): the whole wire RunEvent as JSON; STATUS, EXIT: see the kinds */
  int status;               /* STATUS: the new game_sidecar_status; else 0 */
} game_sidecar_event;

/* Called on the thread that calls game_sidecar_drain. It may call any function
 * of this header except game_sidecar_drain and game_sidecar_destroy. */
typedef void (*game_sidecar_callback)(const game_sidecar_event* event, void* user_data);

/* ---- The object and its process ---- */

GAME_SIDECAR_API int game_sidecar_abi_version(void);

/* A new object with no sidecar yet. NULL only when out of memory. */
GAME_SIDECAR_API game_sidecar_host* game_sidecar_create(void);
/* Cancels the runs, stops the sidecar (close stdin, grace, SIGTERM, SIGKILL),
 * joins the worker and frees everything. Blocks up to exit_grace + terminate_grace.
 * Queued events are dropped without their callbacks. NULL is fine. */
GAME_SIDECAR_API void game_sidecar_destroy(game_sidecar_host* gs);
/* game_sidecar_destroy without the wait, for a game thread (an Unreal
 * subsystem's Deinitialize): returns at once, and the same orderly stop and
 * free run on a thread of the library's own. The object is gone for the
 * caller: no call on it may follow and no callback of it runs again (its
 * queued events are dropped). NULL is fine. */
GAME_SIDECAR_API void game_sidecar_release(game_sidecar_host* gs);
/* Waits up to timeout_ms (-1: no limit) for the objects given to
 * game_sidecar_release to be stopped and freed, and returns how many are still
 * in progress (0: none). Call it before unloading the library (a module's
 * shutdown): a release in progress runs the library's code. */
GAME_SIDECAR_API int game_sidecar_wait_released(int32_t timeout_ms);

typedef struct game_sidecar_launch_options {
  size_t struct_size;           /* sizeof(game_sidecar_launch_options) */
  const char* executable;       /* searched in PATH when it has no '/'; NULL: "game-sidecar" */
  const char* const* args;      /* NULL: {"serve"} */
  size_t arg_count;
  const char* const* env;       /* extra "NAME=value" entries */
  size_t env_count;
  const char* working_directory;/* NULL: the game's */
  int32_t handshake_timeout_ms; /* 0: 15000 */
  int32_t exit_grace_ms;        /* 0: 3000 */
  int32_t terminate_grace_ms;   /* 0: 2000 */
  int32_t call_timeout_ms;      /* deadline of each unary call; 0: 5000 (the C++ client's), -1: none */
  game_sidecar_callback on_log; /* LOG events through the drain; NULL: dropped */
  void* log_user_data;
  /* Supervised restart after an exit the game did not ask for (read only when
   * struct_size covers them; a game built before they existed gets no restart).
   * restart_max 0: no restart, the first such exit is final (STATUS FAILED).
   * At most restart_max restarts within restart_window_ms; the n-th waits
   * restart_backoff_initial_ms * 2^(n-1), at most restart_backoff_max_ms. The
   * same options (and --state-dir) are launched again; calls and runs reach
   * the new process. 0 for a time: its default (60000, 250, 5000). */
  int32_t restart_max;
  int32_t restart_window_ms;
  int32_t restart_backoff_initial_ms;
  int32_t restart_backoff_max_ms;
} game_sidecar_launch_options;

/* Spawns the sidecar and waits for its handshake (blocking). Returns a result
 * (free it): ok with the handshake as JSON, or the launch error. On Windows the
 * sidecar runs in a Job Object that ends it when the game's process ends.
 * FAILED_PRECONDITION while a sidecar is launched or connected; one whose status is
 * FAILED or STOPPED has ended and is replaced (no stop is needed first). */
GAME_SIDECAR_API game_sidecar_result* game_sidecar_launch(game_sidecar_host* gs, const game_sidecar_launch_options* options);
/* The same on the worker; `callback` gets a LAUNCHED event. Returns the handle. */
GAME_SIDECAR_API uint64_t game_sidecar_launch_async(game_sidecar_host* gs, const game_sidecar_launch_options* options,
                                                    game_sidecar_callback callback, void* user_data);
/* Uses a sidecar the game launched itself: target "unix:/path" or "127.0.0.1:port". */
GAME_SIDECAR_API game_sidecar_result* game_sidecar_connect(game_sidecar_host* gs, const char* target, const char* token,
                                                           int32_t call_timeout_ms);
/* The sidecar's pid, or 0 when none was launched (or it was stopped). */
GAME_SIDECAR_API int game_sidecar_pid(const game_sidecar_host* gs);

/* Where STATUS and EXIT events go (NULL: dropped, the default). Set it before
 * the launch to see every one; it applies to events queued after the call.
 *
 * STATUS comes at each change after the launch (the LAUNCHED event is the first
 * READY): RESTARTING then READY across a restart, FAILED, STOPPED. EXIT comes
 * once per process that ended (a stop included), before its STATUS, with event_json
 *   {"exitCode": 3 | null, "signal": 9 | null, "requested": false, "hung": false,
 *    "pid": 1234, "endpoint": "unix:/...", "stderrTail": "last <= 20 stderr lines",
 *    "description": "killed by signal 9 (SIGKILL), not requested; ..."}
 * Both are found on the sidecar's supervisor thread and delivered, like every
 * event, only by game_sidecar_drain. */
GAME_SIDECAR_API void game_sidecar_set_lifecycle_callback(game_sidecar_host* gs, game_sidecar_callback callback,
                                                          void* user_data);
/* The launched sidecar's status now (GAME_SIDECAR_STATUS_NONE when none). */
GAME_SIDECAR_API int game_sidecar_get_status(const game_sidecar_host* gs);

/* Stops the sidecar (blocking, up to exit_grace + terminate_grace) and returns
 * the exit ({"how": "exited"|"terminated"|"killed"|"gone", "exitCode", "signal"};
 * "gone": it had already ended by itself, see the EXIT event). */
GAME_SIDECAR_API game_sidecar_result* game_sidecar_stop(game_sidecar_host* gs);
/* The same on the worker; `callback` gets a STOPPED event. */
GAME_SIDECAR_API uint64_t game_sidecar_stop_async(game_sidecar_host* gs, game_sidecar_callback callback, void* user_data);

/* ---- The drain ---- */

/* Hands up to `max` queued events (0: all that are queued now) to their
 * callbacks on this thread, in the order they were queued. Events queued while
 * it runs wait for the next drain, so one drain is bounded. Returns how many. */
GAME_SIDECAR_API size_t game_sidecar_drain(game_sidecar_host* gs, size_t max);
/* Blocks up to timeout_ms until an event is queued; 1 if one is (tools, tests;
 * never on a game thread). */
GAME_SIDECAR_API int game_sidecar_wait_event(game_sidecar_host* gs, int32_t timeout_ms);

/* ---- Unary calls ---- */

/* `method`: "GetInfo", "Shutdown", "OpenSession", "CloseSession", "ApplyDeltas",
 * "ReplaceState", "GetState", "ExportSession", "ImportSession", "CancelRun",
 * "PreviewPrompt", "ReadTranscript". `request_json`: the request message as
 * proto3 JSON (NULL or "" = an empty message). An unknown method or bad JSON is
 * INVALID_ARGUMENT with reason "INVALID_REQUEST", and nothing is sent. */
GAME_SIDECAR_API game_sidecar_result* game_sidecar_call(game_sidecar_host* gs, const char* method, const char* request_json);
GAME_SIDECAR_API uint64_t game_sidecar_call_async(game_sidecar_host* gs, const char* method, const char* request_json,
                                                  game_sidecar_callback callback, void* user_data);

/* ---- Deltas: a batch of the common ops, sent with ApplyDeltas ---- */

GAME_SIDECAR_API game_sidecar_batch* game_sidecar_batch_create(void);
GAME_SIDECAR_API void game_sidecar_batch_free(game_sidecar_batch* b);
GAME_SIDECAR_API size_t game_sidecar_batch_size(const game_sidecar_batch* b);
/* kind: the EntityKind name ("CHARACTER", "LOCATION", "ITEM", "FACTION",
 * "PLAYER", "OTHER", or with its ENTITY_KIND_ prefix). NULL strings are "".
 * Each add returns 0, or INVALID_ARGUMENT (the batch is unchanged). */
GAME_SIDECAR_API int game_sidecar_batch_upsert_entity(game_sidecar_batch* b, const char* id, const char* kind,
                                                      const char* name, const char* description,
                                                      const char* location_id);
GAME_SIDECAR_API int game_sidecar_batch_remove_entity(game_sidecar_batch* b, const char* id);
/* Sets (or, with value NULL, removes) a string field of an entity. */
GAME_SIDECAR_API int game_sidecar_batch_set_field(game_sidecar_batch* b, const char* entity_id, const char* field,
                                                  const char* value);
GAME_SIDECAR_API int game_sidecar_batch_record_event(game_sidecar_batch* b, const char* text, const char* actor_id,
                                                     const char* location_id);
/* A string scene fact; value NULL removes the fact. */
GAME_SIDECAR_API int game_sidecar_batch_set_scene_fact(game_sidecar_batch* b, const char* key, const char* value);
/* Any other op: one DeltaOp as proto3 JSON ({"setMood": {...}}). */
GAME_SIDECAR_API int game_sidecar_batch_add_json(game_sidecar_batch* b, const char* op_json);

/* ApplyDeltas with the batch's ops (copied: the batch may be freed or reused at
 * once). base_revision must be the session's current revision (the last one a
 * call answered; 0 for a new session), else ABORTED/STALE_REVISION with the
 * current one in the metadata; a tracked session (below) keeps it for you.
 * delta_id NULL = none. Result json: {"revision": "4", "replayed": false}. */
GAME_SIDECAR_API game_sidecar_result* game_sidecar_apply(game_sidecar_host* gs, const char* session_id,
                                                         int64_t base_revision, const char* delta_id,
                                                         const game_sidecar_batch* batch);
GAME_SIDECAR_API uint64_t game_sidecar_apply_async(game_sidecar_host* gs, const char* session_id, int64_t base_revision,
                                                   const char* delta_id, const game_sidecar_batch* batch,
                                                   game_sidecar_callback callback, void* user_data);

/* ---- Tracked sessions (docs/protocol.md §1, "Tracked writes across a restart") ----
 *
 * The C++ client's TrackedSession behind the C ABI: the library keeps the
 * revision the sidecar last acknowledged and sends each batch on top of it, and
 * keeps the game's writes across a supervised restart. It re-opens the session
 * on the new process, resends the batch that was in flight under its delta ID
 * (applied once either way), then sends the writes made while the sidecar was
 * gone, in order, before READY. A tracked write ends in exactly one of:
 *   OK                                   acknowledged; the tracked revision moved;
 *   UNAVAILABLE / WRITE_KEPT             kept: the library sends it after the
 *                                        restart and reports how it landed in a
 *                                        WRITE_SETTLED event. Never send it again;
 *   ABORTED / WRITE_NOT_APPLIED          not in the session and it will not be
 *                                        sent (no restart follows, the session was
 *                                        lost, 4,096 writes held): the game decides;
 *   the sidecar's refusal (STALE_REVISION...) nothing applied;
 *   UNAVAILABLE / SIDECAR_GONE           it died with the batch in flight and no
 *                                        restart follows: unknown, see the contract.
 * A launch that replaces an ended process forgets the tracked sessions: track
 * them again on the new one. */

/* Opens (creates or resumes) session_id and tracks it. request_json: the whole
 * OpenSessionRequest as JSON (NULL or "": {"sessionId": session_id}). `callback`
 * gets CALL_DONE with the OpenSession response and the tracked revision.
 * `on_settled` (may be NULL) gets each WRITE_SETTLED event of this session,
 * through the drain, with event_json:
 *   {"sessionId": "slot-1", "resumed": true, "revision": 7,
 *    "pending": "none" | "replayed" | "applied_now" | "not_applied",
 *    "pendingDeltaId": "...", "pendingReason": "", "pendingMessage": "",
 *    "held": [{"deltaId": "...", "outcome": "applied_now" | "not_applied",
 *              "revision": 8, "reason": "", "message": ""}]}
 * ("resumed": false: the new process had lost the session; resync it with
 * ReplaceState). Tracking a session again keeps its state and replaces on_settled. */
GAME_SIDECAR_API uint64_t game_sidecar_track_async(game_sidecar_host* gs, const char* session_id,
                                                   const char* request_json, game_sidecar_callback on_settled,
                                                   void* settled_user_data, game_sidecar_callback callback,
                                                   void* user_data);
/* ApplyDeltas through the tracked session, on top of its revision (outcomes
 * above). delta_id NULL: the library names the batch ("<session>-<random>-<n>").
 * FAILED_PRECONDITION when the session is not tracked. */
GAME_SIDECAR_API uint64_t game_sidecar_tracked_apply_async(game_sidecar_host* gs, const char* session_id,
                                                           const char* delta_id, const game_sidecar_batch* batch,
                                                           game_sidecar_callback callback, void* user_data);
/* ReplaceState through the tracked session (a resync, a loaded save): the
 * tracked revision follows, and a batch left unacknowledged is dropped (the
 * snapshot wins). request_json: the ReplaceStateRequest as JSON, its sessionId
 * that of the tracked session (or empty). A world over the chunk size goes in
 * pieces. FAILED_PRECONDITION when the session is not tracked. */
GAME_SIDECAR_API uint64_t game_sidecar_tracked_replace_state_async(game_sidecar_host* gs, const char* session_id,
                                                                   const char* request_json,
                                                                   game_sidecar_callback callback, void* user_data);
/* Stops tracking a session, for a game that closed it or replaced it whole (an
 * ImportSession: track it anew after). Writes it held for a restart are
 * discarded with it, and a tracked write queued behind the call fails
 * FAILED_PRECONDITION. 0, or NOT_FOUND when it was not tracked. */
GAME_SIDECAR_API int game_sidecar_untrack(game_sidecar_host* gs, const char* session_id);
/* The revision the sidecar last acknowledged for a tracked session; -1 when it
 * is not tracked. */
GAME_SIDECAR_API int64_t game_sidecar_tracked_revision(game_sidecar_host* gs, const char* session_id);
/* Writes of a tracked session held for the restart (answered WRITE_KEPT, not yet sent). */
GAME_SIDECAR_API size_t game_sidecar_tracked_held_count(game_sidecar_host* gs, const char* session_id);

/* ---- Runs ---- */

typedef enum game_sidecar_run_input {
  GAME_SIDECAR_INPUT_NARRATE = 1,  /* text: what happened, to narrate */
  GAME_SIDECAR_INPUT_DIALOGUE = 2, /* actor_id answers speaker_id's line `text` */
  GAME_SIDECAR_INPUT_DECIDE = 3    /* actor_id chooses among options; text: the situation */
} game_sidecar_run_input;

typedef struct game_sidecar_action_option {
  const char* action_id;
  const char* label;
  const char* target_id;  /* may be NULL */
} game_sidecar_action_option;

typedef struct game_sidecar_run_request {
  size_t struct_size;     /* sizeof(game_sidecar_run_request) */
  int input;              /* game_sidecar_run_input */
  const char* session_id;
  const char* actor_id;   /* dialogue and decide; may be NULL for narrate */
  const char* text;
  const char* speaker_id; /* dialogue */
  const game_sidecar_action_option* options; /* decide */
  size_t option_count;
  const char* run_id;     /* NULL: the client makes one up */
  const char* profile;    /* NULL: the session's */
} game_sidecar_run_request;

/* Starts a run; its events reach `callback` through the drain, ending with
 * exactly one RUN_FINISHED or RUN_ERROR. Never blocks. Returns the run's handle. */
GAME_SIDECAR_API uint64_t game_sidecar_run_start(game_sidecar_host* gs, const game_sidecar_run_request* request,
                                                 game_sidecar_callback callback, void* user_data);
/* The same with the RunRequest as proto3 JSON (any input kind). */
GAME_SIDECAR_API uint64_t game_sidecar_run_start_json(game_sidecar_host* gs, const char* request_json,
                                                      game_sidecar_callback callback, void* user_data);
/* Cancels from this side: the run ends with RUN_ERROR CANCELLED/RUN_CANCELLED
 * and the sidecar stops the model call. Never blocks; 0, or NOT_FOUND when the
 * handle's final event was already drained. */
GAME_SIDECAR_API int game_sidecar_run_cancel(game_sidecar_host* gs, uint64_t run);
/* The run's ID ("" for an unknown handle), e.g. for CancelRun or transcripts. Valid
 * until the run's final event has been drained. */
GAME_SIDECAR_API const char* game_sidecar_run_id(game_sidecar_host* gs, uint64_t run);

/* ---- Text ---- */

/* The number of UTF-16 code units in the first `byte_offset` bytes of UTF-8
 * `text` (of `text_len` bytes): the FString index of a byte offset. A byte
 * offset inside a character counts that character. */
GAME_SIDECAR_API int32_t game_sidecar_utf16_offset(const char* text, size_t text_len, size_t byte_offset);

#ifdef __cplusplus
}
#endif

#endif /* GAME_SIDECAR_C_H */
