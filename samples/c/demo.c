/* A shared library the `dlopen` sample loads at run time; its functions are
 * span keys, named from this library's own DWARF. `square` is inlined into
 * `demo_work` at -O1, so addresses in the loop have an inline chain. */

static inline int square(int i) {
    return i * i;
}

int demo_work(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) sum += square(i);
    return sum;
}

int demo_other(int n) {
    return n * 3 + 1;
}
