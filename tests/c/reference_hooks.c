/* A second pair of -finstrument-functions hooks, the tests' independent truth: it counts every
 * enter and exit per function, and every call per (call site, function), then hands each call to
 * ringtrace's hooks (ringtrace_func_enter/exit, with the caller's stack pointer as the real hooks
 * pass it). At exit it writes the counts to $REFERENCE_HOOKS_OUT, one line each:
 *
 *   anchor ADDRESS                 (of write_counts, first: places the program's addresses)
 *   fn FUNCTION ENTERS EXITS       (addresses in hex, as the program saw them)
 *   call SITE FUNCTION CALLS
 *
 * With REFERENCE_HOOKS_ON_SIGNAL set it also writes them when the program takes SIGABRT or SIGSEGV,
 * before the signal kills it (for a program made to crash: the counts at the crash).
 *
 * Link it into the instrumented program together with a libringtrace.a whose own hooks are weak
 * (objcopy --weaken-symbol). Its functions are never instrumented themselves, whatever the flags.
 * One thread only. */
#define NOT_TRACED __attribute__((no_instrument_function))
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus /* built by c++ when it links a C++ program */
extern "C" {
#endif

void ringtrace_func_enter(void *this_fn, void *call_site, const void *frame);
void ringtrace_func_exit(void *this_fn, void *call_site, const void *frame);

#define SLOTS (1u << 16)

struct entry {
    uintptr_t fn, site; /* site 0: the function's own counts */
    unsigned long enters, exits;
};

static struct entry table[SLOTS];

NOT_TRACED static struct entry *slot(uintptr_t fn, uintptr_t site) {
    uint64_t h = ((uint64_t)fn * 0x9E3779B97F4A7C15u) ^ ((uint64_t)site * 0xC2B2AE3D27D4EB4Fu);
    for (uint32_t i = (uint32_t)(h >> 48) & (SLOTS - 1), n = 0; n < SLOTS; i = (i + 1) & (SLOTS - 1), n++) {
        if (table[i].fn == fn && table[i].site == site) return &table[i];
        if (table[i].fn == 0) {
            table[i].fn = fn;
            table[i].site = site;
            return &table[i];
        }
    }
    abort(); /* more distinct calls than the table holds */
}

NOT_TRACED void __cyg_profile_func_enter(void *fn, void *site) {
    slot((uintptr_t)fn, 0)->enters++;
    slot((uintptr_t)fn, (uintptr_t)site)->enters++;
    ringtrace_func_enter(fn, site, __builtin_dwarf_cfa());
}

NOT_TRACED void __cyg_profile_func_exit(void *fn, void *site) {
    slot((uintptr_t)fn, 0)->exits++;
    ringtrace_func_exit(fn, site, __builtin_dwarf_cfa());
}



NOT_TRACED __attribute__((destructor)) static void write_counts(void) {
    const char *path = getenv("REFERENCE_HOOKS_OUT");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "anchor %lx\n", (unsigned long)(uintptr_t)&write_counts);
    for (uint32_t i = 0; i < SLOTS; i++) {
        const struct entry *e = &table[i];
        if (e->fn == 0) continue;
        if (e->site == 0)
            fprintf(f, "fn %lx %lu %lu\n", (unsigned long)e->fn, e->enters, e->exits);
        else
            fprintf(f, "call %lx %lx %lu\n", (unsigned long)e->site, (unsigned long)e->fn, e->enters);
    }
    fclose(f);
}

/* Writes the counts, then lets the signal take its default course (a core, for the tests). The
 * program is stopped in its own code when it raises the signal: stdio is safe to use here. */
NOT_TRACED static void on_fatal_signal(int sig) {
    write_counts();
    signal(sig, SIG_DFL);
    raise(sig);
}

NOT_TRACED __attribute__((constructor)) static void catch_fatal_signals(void) {
    if (!getenv("REFERENCE_HOOKS_ON_SIGNAL")) return;
    signal(SIGABRT, on_fatal_signal);
    signal(SIGSEGV, on_fatal_signal);
}

#ifdef __cplusplus
}
#endif
