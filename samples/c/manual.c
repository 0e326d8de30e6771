/* The C ABI by hand, without -finstrument-functions (tests/tests/c_api.rs):
 *
 *   manual PATH_DUMP FD_DUMP
 *
 * A stop-when-full ring of 16 records, a named scope around five
 * code-address scopes, then a dump to PATH_DUMP, one to the descriptor of
 * FD_DUMP, one to a path that cannot be created and one to descriptor -1
 * (both must fail with -1). Prints the four results.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "ringtrace.h"

static long step(long i) {
    RINGTRACE_SCOPE();
    return i * 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    ringtrace_set_default_ring(16, 1);
    long total = 0;
    {
        RINGTRACE_SCOPE_NAMED("load");
        for (long i = 0; i < 5; i++) total += step(i);
    }
    int to_path = ringtrace_dump_to_path(argv[1]);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int to_fd = ringtrace_dump_to_fd(fd);
    close(fd);
    int to_nowhere = ringtrace_dump_to_path("/nonexistent/dir/x.rtd");
    int to_no_fd = ringtrace_dump_to_fd(-1);
    printf("%ld %d %d %d %d\n", total, to_path, to_fd, to_nowhere, to_no_fd);
    return 0;
}
