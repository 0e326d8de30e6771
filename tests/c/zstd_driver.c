/* zstd's multi-threaded compression (2 workers, level 3) of N MiB of generated text, for
 * recorder/benches/whole_program.sh: a real multi-threaded C library, traced whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64, n = mib << 20;
    char *src = malloc(n);
    unsigned x = 12345;
    static const char *words[] = {"span ", "ring ", "trace ", "record ", "longjmp ", "stream ", "chunk ", "dump\n"};
    for (size_t i = 0; i < n;) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) & 7];
        size_t len = strlen(w);
        if (i + len > n) len = n - i;
        memcpy(src + i, w, len);
        i += len;
    }
    size_t cap = ZSTD_compressBound(n);
    char *dst = malloc(cap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, 2);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    if (ZSTD_isError(r)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(r)); return 1; }
    printf("%zu\n", r);
    ZSTD_freeCCtx(c);
    return 0;
}
