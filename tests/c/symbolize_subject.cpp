// The subject of tests/tests/symbolize_compat.rs: C++ built with `g++ -O2 -g`,
// so its addresses have mangled names (namespaces, templates, a lambda),
// inline chains (std::sort and friends, small helpers) and discriminators,
// for `rtconv symbolize` to answer side by side with GNU addr2line and
// llvm-symbolizer.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace subject {

template <typename T>
static inline T square(T x) { return x * x; }

struct Stats {
    std::map<std::string, double> totals;
    void add(const std::string &key, double value) { totals[key] += square(value); }
};

template <typename T>
__attribute__((noinline)) T checksum(const std::vector<T> &values) {
    T total{};
    for (const T &v : values) total += square(v) + 1;
    return total;
}

__attribute__((noinline)) void sort_words(std::vector<std::string> &words) {
    std::sort(words.begin(), words.end(), [](const std::string &a, const std::string &b) {
        return a.size() < b.size() || (a.size() == b.size() && a < b);
    });
}

// std::string's == is libstdc++'s enable_if overload, whose mangled name (an unresolved-name
// expression in a template argument) cpp_demangle cannot read and GNU's demangler can.
__attribute__((noinline)) int count_equal(const std::vector<std::string> &words, const std::string &word) {
    int n = 0;
    for (const auto &w : words) n += (w == word);
    return n;
}

}  // namespace subject

int main(int argc, char **argv) {
    std::vector<std::string> words;
    for (int i = 0; i < argc; i++) words.emplace_back(argv[i]);
    subject::sort_words(words);
    subject::Stats stats;
    for (const auto &w : words) stats.add(w, static_cast<double>(w.size()));
    std::vector<int> ints(static_cast<size_t>(argc) * 10, argc);
    std::vector<double> doubles(static_cast<size_t>(argc) * 10, 1.5);
    std::printf("%d %f %zu %d\n", subject::checksum(ints), subject::checksum(doubles), stats.totals.size(),
                subject::count_equal(words, "x"));
    return 0;
}
