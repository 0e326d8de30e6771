// A C++ program traced whole by -finstrument-functions (tests/tests/c_api.rs):
// classes, a template, a lambda, and an exception thrown through instrumented
// frames. Known call counts (one run):
//   Shape::area (Square, Circle): 2 each via total_area; total_area<Shape>: 1
//   sum<int>: 1, sum<double>: 1; the lambda: 4 (std::for_each over 4 values)
//   thrower: 3, catcher: 1 (it calls thrower three times, each throws)
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "ringtrace.h"

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
};

struct Square : Shape {
    double side;
    explicit Square(double s) : side(s) {}
    double area() const override { return side * side; }
};

struct Circle : Shape {
    double r;
    explicit Circle(double radius) : r(radius) {}
    double area() const override { return 3.0 * r * r; }
};

template <typename T>
double total_area(const std::vector<const T *> &shapes) {
    double total = 0;
    for (const T *s : shapes) total += s->area();
    return total;
}

template <typename T>
T sum(const std::vector<T> &values) {
    T total{};
    for (const T &v : values) total += v;
    return total;
}

__attribute__((noinline)) int thrower(int i) {
    if (i >= 0) throw std::runtime_error("thrown through instrumented frames");
    return i;
}

int catcher() {
    int caught = 0;
    for (int i = 0; i < 3; i++) {
        try {
            thrower(i);
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    return caught;
}

int main() {
    Square a(2), b(3);
    Circle c(1), d(2);
    std::vector<const Shape *> shapes{&a, &c, &b, &d};
    double area = total_area(shapes);
    int ints = sum(std::vector<int>{1, 2, 3});
    double doubles = sum(std::vector<double>{0.5, 1.5});
    long seen = 0;
    std::vector<int> values{1, 2, 3, 4};
    std::for_each(values.begin(), values.end(), [&seen](int v) { seen += v; });
    int caught = catcher();
    std::printf("%g %d %g %ld %d\n", area, ints, doubles, seen, caught);
    return 0;
}
