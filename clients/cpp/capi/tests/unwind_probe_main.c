/* Calls unwind_probe (unwind_probe.cpp) from C: 7 == strlen("probe 3"). */
#include <stdio.h>

int unwind_probe(int depth);

int main(void) {
  int got = unwind_probe(3);
  if (got != 7) {
    fprintf(stderr, "unwind_probe returned %d, want 7\n", got);
    return 1;
  }
  printf("unwind: exception caught inside the library\n");
  return 0;
}
