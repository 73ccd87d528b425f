// Keeps libgame_sidecar loadable on glibc 2.17+ although it is linked on a
// newer glibc (Debian 12: 2.36), for the symbols its static parts (gRPC,
// protobuf, abseil, libstdc++, libgcc) reference. Each symbol a newer glibc
// versioned anew is either bound to its old version (the link rewrites the
// reference to a __wrap_ function here with -Wl,--wrap, and that calls the old
// version through a .symver alias), or, when no old version exists, defined
// here. Everything here is local to the library (version script), so the game
// and the rest of the process keep glibc's own.
//
// What this cannot reach: the launcher's posix_spawn_file_actions_addchdir_np
// (2.29) and ..._addclosefrom_np (2.34) (src/spawn_posix.cpp): replacing them
// changes how the child is set up, so it is the launcher's job (docs/unreal.md).
#include <features.h>  // defines __GLIBC__

#if defined(__linux__) && defined(__GLIBC__) && defined(__x86_64__)

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GS_OLD(alias, symbol_at_version) __asm__(".symver " #alias "," symbol_at_version)

extern "C" {

// ---- bound to their pre-2.34 versions (libpthread's, now compat symbols in libc) ----
int gs_old_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
GS_OLD(gs_old_pthread_create, "pthread_create@GLIBC_2.2.5");
int __wrap_pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) {
  return gs_old_pthread_create(t, a, f, arg);
}
int gs_old_pthread_join(pthread_t, void**);
GS_OLD(gs_old_pthread_join, "pthread_join@GLIBC_2.2.5");
int __wrap_pthread_join(pthread_t t, void** r) { return gs_old_pthread_join(t, r); }
int gs_old_pthread_detach(pthread_t);
GS_OLD(gs_old_pthread_detach, "pthread_detach@GLIBC_2.2.5");
int __wrap_pthread_detach(pthread_t t) { return gs_old_pthread_detach(t); }
int gs_old_pthread_once(pthread_once_t*, void (*)(void));
GS_OLD(gs_old_pthread_once, "pthread_once@GLIBC_2.2.5");
int __wrap_pthread_once(pthread_once_t* o, void (*f)(void)) { return gs_old_pthread_once(o, f); }
int gs_old_pthread_key_create(pthread_key_t*, void (*)(void*));
GS_OLD(gs_old_pthread_key_create, "pthread_key_create@GLIBC_2.2.5");
int __wrap_pthread_key_create(pthread_key_t* k, void (*d)(void*)) { return gs_old_pthread_key_create(k, d); }
int gs_old___pthread_key_create(pthread_key_t*, void (*)(void*));
GS_OLD(gs_old___pthread_key_create, "__pthread_key_create@GLIBC_2.2.5");
int __wrap___pthread_key_create(pthread_key_t* k, void (*d)(void*)) { return gs_old___pthread_key_create(k, d); }
void* gs_old_pthread_getspecific(pthread_key_t);
GS_OLD(gs_old_pthread_getspecific, "pthread_getspecific@GLIBC_2.2.5");
void* __wrap_pthread_getspecific(pthread_key_t k) { return gs_old_pthread_getspecific(k); }
int gs_old_pthread_setspecific(pthread_key_t, const void*);
GS_OLD(gs_old_pthread_setspecific, "pthread_setspecific@GLIBC_2.2.5");
int __wrap_pthread_setspecific(pthread_key_t k, const void* v) { return gs_old_pthread_setspecific(k, v); }
int gs_old_pthread_attr_setstacksize(pthread_attr_t*, size_t);
GS_OLD(gs_old_pthread_attr_setstacksize, "pthread_attr_setstacksize@GLIBC_2.2.5");
int __wrap_pthread_attr_setstacksize(pthread_attr_t* a, size_t s) { return gs_old_pthread_attr_setstacksize(a, s); }
int gs_old_pthread_sigmask(int, const sigset_t*, sigset_t*);
GS_OLD(gs_old_pthread_sigmask, "pthread_sigmask@GLIBC_2.2.5");
int __wrap_pthread_sigmask(int how, const sigset_t* s, sigset_t* o) { return gs_old_pthread_sigmask(how, s, o); }
int gs_old_pthread_setname_np(pthread_t, const char*);
GS_OLD(gs_old_pthread_setname_np, "pthread_setname_np@GLIBC_2.12");
int __wrap_pthread_setname_np(pthread_t t, const char* n) { return gs_old_pthread_setname_np(t, n); }

// ---- libm: 2.29 added new versions without the SVID error wrappers ----
double gs_old_pow(double, double);
GS_OLD(gs_old_pow, "pow@GLIBC_2.2.5");
double __wrap_pow(double x, double y) { return gs_old_pow(x, y); }
double gs_old_log2(double);
GS_OLD(gs_old_log2, "log2@GLIBC_2.2.5");
double __wrap_log2(double x) { return gs_old_log2(x); }

// ---- stat/fstat64 became functions in 2.33; before, they called __xstat ----
int gs_old_xstat(int, const char*, struct stat*);
GS_OLD(gs_old_xstat, "__xstat@GLIBC_2.2.5");
int __wrap_stat(const char* path, struct stat* buf) { return gs_old_xstat(1, path, buf); }  // _STAT_VER_LINUX
int gs_old_fxstat64(int, int, struct stat64*);
GS_OLD(gs_old_fxstat64, "__fxstat64@GLIBC_2.2.5");
int __wrap_fstat64(int fd, struct stat64* buf) { return gs_old_fxstat64(1, fd, buf); }

// ---- no old version: defined here ----

// libstdc++ (condition_variable waits on steady_clock): 2.30. The steady
// deadline becomes a realtime one; a wall-clock jump during the wait shifts it,
// which the callers (timed waits in gRPC and the client) tolerate.
int gs_old_pthread_cond_timedwait(pthread_cond_t*, pthread_mutex_t*, const struct timespec*);
GS_OLD(gs_old_pthread_cond_timedwait, "pthread_cond_timedwait@GLIBC_2.3.2");
int __wrap_pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const struct timespec* at) {
  if (clock == CLOCK_REALTIME) return gs_old_pthread_cond_timedwait(c, m, at);
  struct timespec now, real;
  clock_gettime(clock, &now);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left_ns = (static_cast<int64_t>(at->tv_sec) - now.tv_sec) * 1000000000LL + (at->tv_nsec - now.tv_nsec);
  if (left_ns < 0) left_ns = 0;
  int64_t deadline = static_cast<int64_t>(real.tv_sec) * 1000000000LL + real.tv_nsec + left_ns;
  struct timespec when;
  when.tv_sec = static_cast<time_t>(deadline / 1000000000LL);
  when.tv_nsec = static_cast<long>(deadline % 1000000000LL);
  return gs_old_pthread_cond_timedwait(c, m, &when);
}

// libstdc++'s std::random_device: 2.36. The kernel's getrandom (3.17+), as glibc does.
uint32_t __wrap_arc4random(void) {
  uint32_t value = 0;
  unsigned char* p = reinterpret_cast<unsigned char*>(&value);
  size_t got = 0;
  while (got < sizeof value) {
    long n = syscall(SYS_getrandom, p + got, sizeof value - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No getrandom (kernel < 3.17): /dev/urandom.
      int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ssize_t r = read(fd, p, sizeof value);
        close(fd);
        if (r == static_cast<ssize_t>(sizeof value)) return value;
      }
      return value ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&value));
    }
  }
  return value;
}

// libstdc++'s std::random_device ("default" token) and abseil's seeding: 2.25.
int __wrap_getentropy(void* buffer, size_t length) {
  if (length > 256) {
    errno = EIO;
    return -1;
  }
  unsigned char* p = static_cast<unsigned char*>(buffer);
  size_t got = 0;
  while (got < length) {
    long n = syscall(SYS_getrandom, p + got, length - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      return -1;
    }
  }
  return 0;
}

// libstdc++ reads this (2.32) to skip atomics in a single-threaded process;
// "never single-threaded" is always correct.
char __libc_single_threaded = 0;

// libgcc's unwinder (static libgcc_eh) finds a pc's unwind table with this
// (2.35). The same answer from dl_iterate_phdr (2.2.5), which is what libgcc
// itself did before 2.35.
struct gs_dl_find_object {
  unsigned long long dlfo_flags;
  void* dlfo_map_start;
  void* dlfo_map_end;
  struct link_map* dlfo_link_map;
  void* dlfo_eh_frame;
  unsigned long long reserved[7];
};
struct gs_find_state {
  uintptr_t pc;
  gs_dl_find_object* out;
  int found;
};
static int gs_find_callback(struct dl_phdr_info* info, size_t, void* data) {
  gs_find_state* state = static_cast<gs_find_state*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  void* eh = nullptr;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (start < lo) lo = start;
      if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
      if (state->pc >= start && state->pc < start + ph.p_memsz) contains = true;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh = reinterpret_cast<void*>(start);
    }
  }
  if (!contains) return 0;
  state->out->dlfo_flags = 0;
  state->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  state->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  state->out->dlfo_link_map = nullptr;
  state->out->dlfo_eh_frame = eh;
  state->found = 1;
  return 1;
}
int __wrap__dl_find_object(void* pc, gs_dl_find_object* result) {
  gs_find_state state{reinterpret_cast<uintptr_t>(pc), result, 0};
  dl_iterate_phdr(gs_find_callback, &state);
  return state.found ? 0 : -1;
}

}  // extern "C"

#endif
