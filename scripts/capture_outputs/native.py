"""C cases: make with gcc / clang, ctest."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# C via make (gcc / clang), ctest
# --------------------------------------------------------------------------
MAKEFILE = "CC ?= gcc\nCFLAGS ?= -Wall -Wextra -O0\n\napp: main.c util.c\n\t$(CC) $(CFLAGS) -o app main.c util.c\n"
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helper(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            int result = helper(3);
            printf("%d\\n", reslt);
            return 0;
        }
        """),
}
add("make", "gcc_compile_error", fs, ["make"],
    facts([], "error", "‘reslt’ undeclared", at(fs, "main.c", 'printf("%d\\n", reslt);'), 1),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})
add("make", "clang_compile_error", fs, ["make"],
    facts([], "error", "use of undeclared identifier 'reslt'", at(fs, "main.c", 'printf("%d\\n", reslt);'), 1),
    requires=["make", "clang"], version=["clang", "--version"], env={"CC": "clang"})
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helper(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            int unused = 7;
            unsigned n = 3;
            int i = -1;
            if (i < n) {
                printf("%d\\n", helper(i));
            }
            return 0;
        }
        """),
}
add("make", "gcc_warnings", fs, ["make"],
    facts(["-Wunused-variable", "-Wsign-compare"], "warning", "unused variable ‘unused’",
          at(fs, "main.c", "int unused = 7;"), None),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helpr(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            printf("%d\\n", helper(3));
            return 0;
        }
        """),
}
add("make", "gcc_link_error", fs, ["make"],
    facts([], "error", "undefined reference to `helper'", None, 1),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})

fs = {
    "CMakeLists.txt": D("""
        cmake_minimum_required(VERSION 3.16)
        project(glcap C)
        enable_testing()
        add_executable(test_math test_math.c)
        add_executable(test_strings test_strings.c)
        add_executable(test_ok test_ok.c)
        add_test(NAME math COMMAND test_math)
        add_test(NAME strings COMMAND test_strings)
        add_test(NAME ok COMMAND test_ok)
        """),
    "test_math.c": D("""
        #include <stdio.h>

        static int square(int x) { return x + x; }

        int main(void) {
            if (square(3) != 9) {
                fprintf(stderr, "test_math.c:%d: square(3) == %d, expected 9\\n", __LINE__, square(3));
                return 1;
            }
            return 0;
        }
        """),
    "test_strings.c": D("""
        #include <assert.h>
        #include <string.h>

        int main(void) {
            const char *s = "hello";
            assert(strlen(s) == 4);
            return 0;
        }
        """),
    "test_ok.c": "int main(void) { return 0; }\n",
}
add("ctest", "failures", fs, ["ctest", "--test-dir", "build", "--output-on-failure"],
    facts(["math", "strings"], "Failed", "square(3) == 6, expected 9",
          at(fs, "test_math.c", "fprintf(stderr"), 2, killed=True),
    setup=[["cmake", "-S", ".", "-B", "build"], ["cmake", "--build", "build"]],
    requires=["ctest", "cmake", "cc"])
