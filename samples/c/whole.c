/* A C program traced whole by -finstrument-functions (tests/tests/c_api.rs).
 *
 *   whole WORKERS DEPTH
 *
 * Each of WORKERS pthreads runs work(DEPTH): fib(DEPTH) recursively, then
 * leaf_add and leaf_mul three times each. main also opens a named scope and
 * a code-address scope by hand. Known call counts:
 *   fib: WORKERS * calls(DEPTH), calls(n) = 1 for n < 2, else 1 + calls(n-1) + calls(n-2)
 *   work, worker: WORKERS each; leaf_add, leaf_mul: 3 * WORKERS each; main: 1
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ringtrace.h"

long fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) long leaf_add(long a, long b) {
    return a + b;
}

__attribute__((noinline)) long leaf_mul(long a, long b) {
    return a * b;
}

long work(int depth) {
    long r = fib(depth);
    for (int i = 0; i < 3; i++) {
        r = leaf_add(r, i);
        r = leaf_mul(r, 1);
    }
    return r;
}

void *worker(void *arg) {
    long depth = (long)arg;
    return (void *)work((int)depth);
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 2;
    long depth = argc > 2 ? atol(argv[2]) : 10;
    pthread_t threads[64];
    if (workers > 64) workers = 64;
    {
        RINGTRACE_SCOPE_NAMED("spawn and join");
        for (int i = 0; i < workers; i++) pthread_create(&threads[i], NULL, worker, (void *)depth);
        for (int i = 0; i < workers; i++) pthread_join(threads[i], NULL);
    }
    {
        RINGTRACE_SCOPE();
        printf("%ld\n", leaf_add(1, 2));
    }
    return 0;
}
