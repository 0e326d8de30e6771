/* A shared library the `dlopen` sample loads at run time; its functions are
 * span keys, named from this library's own DWARF. */

int demo_work(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) sum += i * i;
    return sum;
}

int demo_other(int n) {
    return n * 3 + 1;
}
