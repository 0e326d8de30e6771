/* A heap overflow for AddressSanitizer to report (tests/tests/external_tools/symbolize_callers.rs):
 * main -> outer -> mid -> deep reads one int past a malloc'd block of four. */
#include <stdlib.h>

__attribute__((noinline)) int deep(const int *p, int i) { return p[i]; }
__attribute__((noinline)) int mid(const int *p, int i) { return deep(p, i) + 1; }
__attribute__((noinline)) int outer(int i) {
  int *p = malloc(4 * sizeof(int));
  int r = mid(p, i);
  free(p);
  return r;
}
int main(int argc, char **argv) {
  (void)argv;
  return outer(argc + 3);
}
