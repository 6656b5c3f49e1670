"""C++ functions of src/, transports/ and collectives/ are at most 80 lines, but for the
shrinking list check_cpp_shape.ALLOWED (label `docs`; docs/developers/testing.md#docs-checks).
The reader of function bodies is checked on the shapes the tree has."""
import os
import unittest

import check_cpp_shape as shape

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def names(text):
    return [(name, lines) for _, name, lines in shape.functions(text)]


class Reader(unittest.TestCase):
    def test_functions_methods_and_constructors(self):
        text = """namespace gdr {
struct Foo : Base {
  Foo(int x) : a_{x}, b_(x) {
    run();
  }
  int get() const noexcept { return a_; }
  auto twice() -> std::vector<int> {
    return {a_, a_};
  }
 private:
  int a_{0};
  int b_;
};
Foo::~Foo() = default;
void Foo::bar(int x)
    const {
  if (x) { for (;;) {} }
  auto f = [&](int y) { return y; };
}
}  // namespace gdr
"""
        self.assertEqual(names(text), [("Foo", 3), ("get", 1), ("twice", 3), ("Foo::bar", 5)])

    def test_braces_in_comments_strings_and_characters(self):
        text = """#define OPEN {
// a comment {
/* and { another */
int f() {
  const char* s = "{ \\" {";
  char c = '{';
  char d = '\\'';
  auto raw = R"x(})" { )x";
  long n = 1'000'000;
  return s[0] + c + d + n;
}
"""
        self.assertEqual(names(text), [("f", 8)])

    def test_blocks_that_are_no_function(self):
        text = """extern "C" {
enum class Kind : int { a, b };
const int table[] = {1, 2};
GDR_REGISTER_TEST(reg, {.name = "x", .make = [] { return 1; }});
GDR_REGISTER_TRANSPORT(reg_ucx, "ucx", [](Bootstrap& b, const Settings& s) {
  return make(b, s);
});
}
"""
        self.assertEqual(names(text), [("lambda", 3)])

    def test_unbalanced_is_an_error(self):
        with self.assertRaises(ValueError):
            shape.functions("int f() {\n")


class Check(unittest.TestCase):
    def test_list_only_shrinks(self):
        found = {"a.cpp f": (1, 81), "a.cpp g": (9, 80), "a.cpp h": (20, 95), "a.cpp k": (40, 90)}
        allowed = {"a.cpp g": 85, "a.cpp h": 90, "a.cpp k": 90, "a.cpp gone": 100}
        out = "\n".join(shape.check(found, allowed))
        self.assertIn("a.cpp:1 f 81 lines (at most 80", out)      # new, over
        self.assertIn("a.cpp:9 g is 80 lines now", out)            # fixed, still listed
        self.assertIn("a.cpp:20 h 95 lines, grew from 90", out)    # grew
        self.assertIn("a.cpp gone: listed in ALLOWED", out)        # gone
        self.assertNotIn(" k ", out)                               # as listed
        self.assertEqual(len(out.split("\n")), 4)

    def test_the_tree(self):
        found, bad = shape.scan(REPO)
        self.assertEqual(bad, [])
        self.assertGreater(len(found), 500)  # it does see the tree's functions
        self.assertEqual(shape.check(found, shape.ALLOWED), [])


if __name__ == "__main__":
    unittest.main()
