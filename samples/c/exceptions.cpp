// A C++ exception crossing C frames (tests/tests/longjmp.rs): three rounds of
// catcher() -> c_outer() -> c_inner() -> thrower(), which throws for odd values; the catch
// then calls recover(). Prints the sum of what the calls returned.
#include <cstdio>

extern "C" int c_outer(int (*callback)(int), int x);

__attribute__((noinline)) static int thrower(int x) {
    if (x % 4 == 2) throw x;
    return x;
}

extern "C" int thrower_c(int x) { return thrower(x); }

__attribute__((noinline)) static int recover(int x) { return -x; }

__attribute__((noinline)) static int catcher(int x) {
    try {
        return c_outer(thrower_c, x);
    } catch (int thrown) {
        return recover(thrown);
    }
}

int main() {
    int sum = 0;
    for (int x = 1; x <= 3; x++) sum += catcher(x);
    std::printf("%d\n", sum);
    return 0;
}
