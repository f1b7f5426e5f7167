"""go (build, vet, test, test -json) cases."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# go
# --------------------------------------------------------------------------
GO_MOD = "module example.com/glcap\n\ngo 1.19\n"
GO_V = ["go", "version"]
fs = {
    "go.mod": GO_MOD,
    "calc.go": D("""
        package glcap

        func Add(a, b int) int {
        	return a - b
        }

        func Words(s string) []string {
        	out := []string{}
        	start := 0
        	for i := 0; i < len(s); i++ {
        		if s[i] == ' ' {
        			out = append(out, s[start:i])
        			start = i + 1
        		}
        	}
        	return out
        }
        """),
    "calc_test.go": D("""
        package glcap

        import "testing"

        func TestAdd(t *testing.T) {
        	if got := Add(2, 2); got != 4 {
        		t.Errorf("Add(2, 2) = %d; want 4", got)
        	}
        }

        func TestWords(t *testing.T) {
        	cases := []struct {
        		in   string
        		want int
        	}{{"a b", 2}, {"a", 1}}
        	for _, c := range cases {
        		t.Run(c.in, func(t *testing.T) {
        			if got := len(Words(c.in)); got != c.want {
        				t.Fatalf("len(Words(%q)) = %d; want %d", c.in, got, c.want)
        			}
        		})
        	}
        }

        func TestOK(t *testing.T) {}
        """),
}
# the leaf tests, as `go test -json` counts them: TestWords fails only because its subtests do
go_facts = facts(["TestAdd", "TestWords/a_b", "TestWords/a"], None, "Add(2, 2) = 0; want 4",
                 at(fs, "calc_test.go", 't.Errorf("Add(2, 2)'), 3)
add("go", "test_fail", fs, ["go", "test", "./..."], go_facts, version=GO_V)
add("go", "test_verbose", fs, ["go", "test", "-v", "./..."], go_facts, version=GO_V)
add("go", "test_json", fs, ["go", "test", "-json", "./..."], go_facts, version=GO_V)
# a suite that logs (t.Log) and skips (t.Skip): green, and the same with one failing test
LOG_SKIP_TEST = D("""
    package glcap

    import "testing"

    func TestAdd(t *testing.T) {
    	t.Log("checking 2 + 2")
    	if got := Add(2, 2); got != 4 {
    		t.Errorf("Add(2, 2) = %d; want 4", got)
    	}
    }

    func TestNeedsDatabase(t *testing.T) {
    	t.Skip("no database in this environment")
    }

    func TestTable(t *testing.T) {
    	for _, name := range []string{"fast", "slow"} {
    		name := name
    		t.Run(name, func(t *testing.T) {
    			t.Logf("case %s", name)
    			if name == "slow" {
    				t.Skip("slow case skipped")
    			}
    		})
    	}
    }
    """)
fs = {
    "go.mod": GO_MOD,
    "add.go": "package glcap\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    "add_test.go": LOG_SKIP_TEST,
}
# leaf tests: TestTable is the parent of TestTable/fast (passed) and TestTable/slow (skipped)
green = facts([], None, None, None, 0, counts={"passed": 2, "failed": 0, "skipped": 2})
add("go", "log_skip_green_verbose", fs, ["go", "test", "-v", "./..."], green, version=GO_V)
add("go", "log_skip_green_json", fs, ["go", "test", "-json", "./..."], green, version=GO_V)
fs = dict(fs, **{"add.go": "package glcap\n\nfunc Add(a, b int) int {\n\treturn a * b + 1\n}\n"})
red = facts(["TestAdd"], None, "Add(2, 2) = 5; want 4", at(fs, "add_test.go", "t.Errorf("), 1,
            counts={"passed": 1, "failed": 1, "skipped": 2})
add("go", "log_skip_red", fs, ["go", "test", "./..."], dict(red, counts=None),  # not printed
    version=GO_V)
add("go", "log_skip_red_verbose", fs, ["go", "test", "-v", "./..."], red, version=GO_V)
add("go", "log_skip_red_json", fs, ["go", "test", "-json", "./..."], red, version=GO_V)
# two packages, one test name: a's TestX has subtests (TestX/one fails), b's TestX is a plain
# failing test. A parent is a parent within its own package only: b's TestX, TestY and TestZ are
# leaves that fail, pass and skip. Both failures say "got 1, want 2" on line 6 (go -json may print
# b first).
fs = {
    "go.mod": GO_MOD,
    "a/x_test.go": D("""
        package a

        import "testing"

        func TestX(t *testing.T) {
        	t.Run("one", func(t *testing.T) { t.Errorf("a: got %d, want %d", 1, 2) })
        	t.Run("two", func(t *testing.T) {})
        }

        func TestY(t *testing.T) {
        	t.Run("sub", func(t *testing.T) {})
        }

        func TestZ(t *testing.T) {
        	t.Run("sub", func(t *testing.T) { t.Skip("a: sub skipped") })
        }
        """),
    "b/x_test.go": D("""
        package b

        import "testing"

        func TestX(t *testing.T) {
        	t.Errorf("b: got %d, want %d", 1, 2)
        }

        func TestY(t *testing.T) {}

        func TestZ(t *testing.T) {
        	t.Skip("b: skipped")
        }
        """),
}
two = facts(["TestX/one", "TestX"], None, "got 1, want 2", at(fs, "a/x_test.go", "t.Errorf("), 2,
            counts={"passed": 3, "failed": 2, "skipped": 2})
add("go", "two_packages", fs, ["go", "test", "./..."], dict(two, counts=None),  # not printed
    version=GO_V)
add("go", "two_packages_verbose", fs, ["go", "test", "-v", "./..."], two, version=GO_V)
add("go", "two_packages_json", fs, ["go", "test", "-json", "./..."], two, version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "idx.go": D("""
        package glcap

        func Third(xs []int) int {
        	return xs[2]
        }
        """),
    "idx_test.go": D("""
        package glcap

        import "testing"

        func TestThird(t *testing.T) {
        	if Third([]int{1}) != 0 {
        		t.Fatal("unreachable")
        	}
        }
        """),
}
add("go", "test_panic", fs, ["go", "test", "./..."],
    facts(["TestThird"], "panic", "runtime error: index out of range [2] with length 1",
          at(fs, "idx.go", "return xs[2]"), 1, killed=False), version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "main.go": D("""
        package main

        import (
        	"fmt"
        	"os"
        )

        func main() {
        	name := "ada"
        	fmt.Printf("hello %d\\n", name)
        	if len(os.Args) > 5 {
        		return
        	}
        }
        """),
}
add("go", "vet", fs, ["go", "vet", "./..."],
    facts([], None, "fmt.Printf format %d has arg name of wrong type string",
          at(fs, "main.go", "fmt.Printf("), 1), version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "main.go": D("""
        package main

        import (
        	"fmt"
        	"strings"
        )

        func count(s string) int {
        	return strings.Count(s, "a")
        }

        func main() {
        	var total int = "many"
        	fmt.Println(total, count(42))
        }
        """),
}
add("go", "build_error", fs, ["go", "build", "./..."],
    facts([], None, 'cannot use "many" (untyped string constant) as int value in variable declaration',
          at(fs, "main.go", 'var total int = "many"'), 2), version=GO_V)

# a test that never returns, the run killed at the time limit (issue 37): -v printed which tests
# started; the one with no result is where it hung
fs = {
    "go.mod": GO_MOD,
    "count.go": D("""
        package glcap

        // Countdown counts the steps down to zero, two at a time.
        func Countdown(n int) int {
        	steps := 0
        	for n != 0 {
        		n -= 2
        		steps++
        	}
        	return steps
        }
        """),
    "count_test.go": D("""
        package glcap

        import "testing"

        func TestEvenStart(t *testing.T) {
        	if got := Countdown(4); got != 2 {
        		t.Errorf("Countdown(4) = %d, want 2", got)
        	}
        }

        func TestOddStart(t *testing.T) {
        	if got := Countdown(3); got != 2 {
        		t.Errorf("Countdown(3) = %d, want 2", got)
        	}
        }
        """),
}
add("go", "test_verbose_killed", fs, ["go", "test", "-v", "./..."],
    facts(["TestOddStart"], None, None, None, killed=True), version=GO_V, timeout=20)
