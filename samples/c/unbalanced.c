/* Calls that never return normally, traced by -finstrument-functions
 * (tests/tests/c_api.rs). One mode per run:
 *
 *   unbalanced exit      exit(0) from inside outer() -> inner(): both still open at the dump
 *   unbalanced thread    a thread calls pthread_exit from inside inner(): its spans stay open
 *   unbalanced longjmp   longjmp from inner() back to main three times: 6 spans unwound
 *   unbalanced deep      recursion 300 deep under main: 45 calls deeper than the 256-frame shadow stack
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf back;
static const char *mode;

__attribute__((noinline)) void inner(void) {
    if (strcmp(mode, "exit") == 0) exit(0);
    if (strcmp(mode, "thread") == 0) pthread_exit(NULL);
    if (strcmp(mode, "longjmp") == 0) longjmp(back, 1);
}

__attribute__((noinline)) void outer(void) {
    inner();
}

void *thread_main(void *arg) {
    (void)arg;
    outer();
    return NULL;
}

__attribute__((noinline)) int deep(int n) {
    return n == 0 ? 0 : 1 + deep(n - 1);
}

__attribute__((noinline)) void after(void) {}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "exit";
    if (strcmp(mode, "thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, thread_main, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(mode, "longjmp") == 0) {
        for (volatile int i = 0; i < 3; i++) {
            if (setjmp(back) == 0) outer();
        }
    } else if (strcmp(mode, "deep") == 0) {
        deep(299);
    } else {
        outer();
    }
    after();
    return 0;
}
