/* A program whose time is spent in one known function, for `perf record` (tests/tests/
 * external_tools/symbolize_callers.rs): main -> mid -> deep, deep's loop taking nearly all of it. */
#include <stdio.h>

static volatile long sink;
__attribute__((noinline)) void deep(long n) {
  for (long i = 0; i < n; i++) sink += i * i;
}
__attribute__((noinline)) void mid(long n) { deep(n); }
int main(void) {
  for (int k = 0; k < 200; k++) mid(1000000);
  printf("%ld\n", sink);
  return 0;
}
