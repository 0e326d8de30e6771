/* Calls left by jumps, traced by -finstrument-functions (tests/tests/longjmp.rs). Three rounds of:
 *
 *   siglongjmp  a signal handler jumps out of the two calls it interrupted, back to the function
 *               that called sigsetjmp, which then calls a function with a larger frame than theirs
 *   longjmp     a jump out of a recursion 5 deep (with _FORTIFY_SOURCE: __longjmp_chk)
 *   _longjmp    setjmp in a loop: each pass calls the same function from the same call site,
 *               which jumps back out of a callee of its own
 *
 * Prints the sum of what the calls computed. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf from_signal;
static jmp_buf from_recursion, from_loop;
static volatile int sink;

__attribute__((noinline)) void on_signal(int sig) {
    sink += sig;
    siglongjmp(from_signal, 1);
}

__attribute__((noinline)) void interrupted_inner(void) {
    sink += 1;
    raise(SIGUSR1);
    sink += 1000; /* never reached */
}

__attribute__((noinline)) void interrupted_outer(void) {
    interrupted_inner();
    sink += 1000;
}

/* A frame larger than interrupted_outer's: its stack pointer lies below theirs. */
__attribute__((noinline)) int after_signal(int round) {
    volatile char scratch[4096];
    memset((char *)scratch, round, sizeof scratch);
    return scratch[100];
}

__attribute__((noinline)) int guarded_by_sigsetjmp(int round) {
    if (sigsetjmp(from_signal, 1) == 0) {
        interrupted_outer();
        return -1;
    }
    return after_signal(round);
}

__attribute__((noinline)) void recurse(int depth) {
    if (depth == 0) longjmp(from_recursion, 7);
    recurse(depth - 1);
    sink += 1000;
}

__attribute__((noinline)) int guarded_by_setjmp(void) {
    int got = setjmp(from_recursion);
    if (got == 0) recurse(4);
    return got;
}

__attribute__((noinline)) void leave_loop(void) {
    _longjmp(from_loop, 1);
}

__attribute__((noinline)) void loop_body(int pass) {
    sink += pass;
    leave_loop();
}

__attribute__((noinline)) int loop_with_setjmp(void) {
    volatile int passes = 0;
    _setjmp(from_loop);
    if (passes < 3) {
        passes = passes + 1;
        loop_body(passes);
    }
    return passes;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    int sum = 0;
    for (int round = 1; round <= 3; round++) {
        sum += guarded_by_sigsetjmp(round) + guarded_by_setjmp() + loop_with_setjmp();
    }
    printf("%d\n", sum);
    return 0;
}
