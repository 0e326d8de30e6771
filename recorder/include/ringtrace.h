/* ringtrace: function-level spans for C and C++ at the cost of two counter reads.
 *
 * Link target/release/libringtrace.a (cargo build --release -p ringtrace-capi)
 * with -lpthread -ldl -lm -lrt -lgcc_s. Two ways to record:
 *
 * 1. Whole program, no source change: compile with -finstrument-functions
 *    (and -g, for names) and link the library. Every function call becomes a
 *    span keyed by the function's address; a dump is written at exit to
 *    $RINGTRACE_DUMP or ringtrace-PID.rtd. Calls nested deeper than 256 frames
 *    per thread, and calls a longjmp skipped, are counted, not recorded.
 *
 * 2. By hand: RINGTRACE_SCOPE() (keyed by this code address, named from
 *    DWARF) or RINGTRACE_SCOPE_NAMED("label") (a site descriptor: named
 *    without debug info) for the rest of the enclosing block; in C++ the
 *    same macros use the RAII class ringtrace::Scope.
 *
 * Then: rtconv convert ringtrace-PID.rtd -o trace.json
 *
 * Threads: each thread records into its own ring, made on its first span
 * (RINGTRACE_RING_RECORDS, RINGTRACE_RING_MODE=stop). A span must end on the
 * thread that began it. A signal handler that records (or is compiled with
 * -finstrument-functions) could interrupt its thread in the middle of a
 * record: mark such handlers __attribute__((no_instrument_function)) and do
 * not record in them (Rust code has ringtrace::interrupt for this case).
 */
#ifndef RINGTRACE_H
#define RINGTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A span in progress: begin with ringtrace_enter, end with ringtrace_exit. */
typedef struct ringtrace_span {
    const void *track;
    uint64_t key;
    uint64_t enter;
    uint64_t token;
} ringtrace_span_t;

/* Begins a span keyed by a code address or a site descriptor (RINGTRACE_SITE). */
ringtrace_span_t ringtrace_enter(const void *key);
/* Ends it (again: nothing). Takes a pointer so it can be a cleanup function. */
void ringtrace_exit(ringtrace_span_t *span);

/* Recording on (non-zero) or off, for the whole process. */
void ringtrace_set_enabled(int on);
/* The ring of threads that have not recorded yet: records (a power of two is
   used) and whether it stops when full instead of overwriting the oldest. */
void ringtrace_set_default_ring(size_t records, int stop_when_full);

/* Dumps every thread's ring now. 0 on success, -1 (and a line on stderr) on failure. */
int ringtrace_dump_to_path(const char *path);
int ringtrace_dump_to_fd(int fd); /* the descriptor stays open */
/* Streams every thread's spans to path until exit: a small ring per thread drained into the file as
   the program runs, so the whole run is kept (RINGTRACE_STREAM=path does the same from the first
   span). Threads that recorded before keep their flight recorders. 0, or -1 and a line on stderr. */
int ringtrace_stream_to_path(const char *path);
/* Dumps at exit: to $RINGTRACE_DUMP, else path, else (NULL) ringtrace-PID.rtd. */
void ringtrace_dump_at_exit(const char *path);

/* The -finstrument-functions hooks' work, for a program with hooks of its own that chains to
   ringtrace's: frame is the instrumented function's stack pointer at the hook call, which a hook
   gets as __builtin_dwarf_cfa() (GCC, Clang), or NULL if unknown (then only an exit below the top
   of the shadow stack reveals a longjmp). */
void ringtrace_func_enter(void *this_fn, void *call_site, const void *frame);
void ringtrace_func_exit(void *this_fn, void *call_site, const void *frame);

#ifdef __cplusplus
}
#endif

#define RINGTRACE_CONCAT_(a, b) a##b
#define RINGTRACE_CONCAT(a, b) RINGTRACE_CONCAT_(a, b)

/* The address of a site descriptor for a string-literal label, placed in the
   ringtrace_sites section that every dump carries (layout: formats/FORMAT.md). */
#define RINGTRACE_SITE(label)                                                                \
    (__extension__({                                                                         \
        static const struct {                                                                \
            uint32_t magic, line;                                                            \
            uint16_t label_len, file_len;                                                    \
            uint32_t column;                                                                 \
            char text[sizeof(label __FILE__)];                                               \
        } ringtrace_site_ __attribute__((section("ringtrace_sites"), aligned(8), used)) = {  \
            0x53495445u, __LINE__, sizeof(label) - 1, sizeof(__FILE__) - 1, 0, label __FILE__}; \
        (const void *)&ringtrace_site_;                                                      \
    }))

/* A code address inside the caller: the call's return address. */
static __attribute__((noinline, no_instrument_function, unused)) ringtrace_span_t ringtrace_enter_here_(void) {
    return ringtrace_enter(__builtin_return_address(0));
}

#ifdef __cplusplus
namespace ringtrace {
/* A span for the lifetime of this object. */
class Scope {
public:
    explicit Scope(const void *key) __attribute__((no_instrument_function)) : span_(ringtrace_enter(key)) {}
    explicit Scope(ringtrace_span_t span) __attribute__((no_instrument_function)) : span_(span) {}
    ~Scope() __attribute__((no_instrument_function)) { ringtrace_exit(&span_); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

private:
    ringtrace_span_t span_;
};
} /* namespace ringtrace */
#define RINGTRACE_SCOPE() ::ringtrace::Scope RINGTRACE_CONCAT(ringtrace_scope_, __LINE__)(ringtrace_enter_here_())
#define RINGTRACE_SCOPE_NAMED(label) \
    ::ringtrace::Scope RINGTRACE_CONCAT(ringtrace_scope_, __LINE__)(RINGTRACE_SITE(label))
#else
#define RINGTRACE_SCOPE()                                                               \
    __attribute__((cleanup(ringtrace_exit), unused)) ringtrace_span_t RINGTRACE_CONCAT( \
        ringtrace_scope_, __LINE__) = ringtrace_enter_here_()
#define RINGTRACE_SCOPE_NAMED(label)                                                    \
    __attribute__((cleanup(ringtrace_exit), unused)) ringtrace_span_t RINGTRACE_CONCAT( \
        ringtrace_scope_, __LINE__) = ringtrace_enter(RINGTRACE_SITE(label))
#endif

#endif /* RINGTRACE_H */
