/* libgame_sidecar loads the way the Unreal editor loads a module (issue 32 item 1):
 * dlopen(RTLD_LAZY | RTLD_LOCAL), in a process that has already dlopen'ed other
 * modules with static (initial-exec) TLS. glibc serves a dlopen'ed library's static
 * TLS from a small surplus reserved at start-up; a library whose TLS segment does
 * not fit in what is left fails with "cannot allocate memory in static TLS block".
 *
 *   test_dlopen LIBGAME_SIDECAR NEIGHBOUR...
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBGAME_SIDECAR [NEIGHBOUR...]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    void* neighbour = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (neighbour == NULL) {
      fprintf(stderr, "test_dlopen: the neighbour %s did not load: %s\n", argv[i], dlerror());
      return 2;
    }
    int (*touch)(int);
    *(void**)(&touch) = dlsym(neighbour, "tls_neighbour_touch");  /* POSIX's idiom for a function */
    if (touch == NULL || touch(i) != i) {
      fprintf(stderr, "test_dlopen: the neighbour %s has no working TLS\n", argv[i]);
      return 2;
    }
  }
  void* library = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "test_dlopen: FAIL: %s\n", dlerror());
    return 1;
  }
  int (*abi_version)(void);
  *(void**)(&abi_version) = dlsym(library, "game_sidecar_abi_version");
  if (abi_version == NULL || abi_version() < 1) {
    fprintf(stderr, "test_dlopen: FAIL: game_sidecar_abi_version is missing or wrong\n");
    return 1;
  }
  printf("test_dlopen: libgame_sidecar (ABI %d) loaded after %d TLS neighbours\n", abi_version(), argc - 2);
  return dlclose(library) == 0 ? 0 : 1;
}
