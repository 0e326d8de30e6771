/* C frames between a C++ throw and its catch (tests/tests/longjmp.rs, with exceptions.cpp):
 * compiled as C, without -fexceptions, so the unwinder passes through them running no cleanups,
 * and their exit hooks never run. */
__attribute__((noinline)) int c_inner(int (*callback)(int), int x) {
    return callback(x) + 1;
}

__attribute__((noinline)) int c_outer(int (*callback)(int), int x) {
    return c_inner(callback, x * 2) + 1;
}
