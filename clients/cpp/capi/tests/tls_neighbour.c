/* A module with initial-exec TLS, as engine modules and the libraries they bring
 * have: loaded with dlopen, its TLS comes out of glibc's static TLS surplus, the
 * same small reserve libgame_sidecar's own static TLS must fit in afterwards. */
#ifndef NEIGHBOUR_TLS_BYTES
#define NEIGHBOUR_TLS_BYTES 256
#endif
__thread volatile char tls_neighbour_block[NEIGHBOUR_TLS_BYTES] __attribute__((tls_model("initial-exec")));

int tls_neighbour_touch(int value);
int tls_neighbour_touch(int value) {
  tls_neighbour_block[value % NEIGHBOUR_TLS_BYTES] = (char)value;
  return tls_neighbour_block[value % NEIGHBOUR_TLS_BYTES];
}
