/* The peer side of rtconv/benches/vs_uftrace.sh: two threads computing the
 * naive recursive fib(argv[1]), built with -pg for uftrace. */
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static void *worker(void *arg) { long r = fib((int)(long)arg); return (void *)r; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 30;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, (void *)(long)n);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
