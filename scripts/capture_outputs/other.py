"""rspec, minitest, phpunit, javac and shell / environment failure cases."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# ruby: rspec, minitest
# --------------------------------------------------------------------------
fs = {
    "lib/calc.rb": D("""
        class Calc
          def add(a, b)
            a + b + 1
          end

          def avg(xs)
            xs.sum / xs.size
          end

          def config
            nil
          end
        end
        """),
    "spec/calc_spec.rb": D("""
        require_relative "../lib/calc"

        RSpec.describe Calc do
          it "adds two numbers" do
            expect(Calc.new.add(2, 2)).to eq(4)
          end

          it "reads the port" do
            expect(Calc.new.config.fetch(:port)).to eq(80)
          end

          it "averages" do
            expect(Calc.new.avg([2, 4])).to eq(3)
          end
        end
        """),
}
add("rspec", "failures", fs, ["rspec"],
    facts(["./spec/calc_spec.rb:4", "./spec/calc_spec.rb:8"], "RSpec::Expectations::ExpectationNotMetError",
          "got: 5", at(fs, "spec/calc_spec.rb", "expect(Calc.new.add(2, 2)).to eq(4)"), 2))
fs = {
    "lib/calc.rb": D("""
        class Calc
          def add(a, b)
            a + b + 1
          end

          def div(a, b)
            a / b
          end
        end
        """),
    "test/test_calc.rb": D("""
        require "minitest/autorun"
        require "calc"

        class CalcTest < Minitest::Test
          def test_add
            assert_equal 4, Calc.new.add(2, 2)
          end

          def test_div
            assert_equal 0, Calc.new.div(1, 0)
          end

          def test_ok
            assert true
          end
        end
        """),
}
add("minitest", "failures", fs, ["ruby", "-Ilib", "test/test_calc.rb", "--seed", "42"],
    facts(["CalcTest#test_add", "CalcTest#test_div"], "Minitest::Assertion", "Expected: 4\n  Actual: 5",
          at(fs, "test/test_calc.rb", "assert_equal 4, Calc.new.add(2, 2)"), 2),
    version=["ruby", "-rminitest", "-e", "puts \"ruby #{RUBY_VERSION} minitest #{Minitest::VERSION}\""])

# --------------------------------------------------------------------------
# phpunit
# --------------------------------------------------------------------------
fs = {
    "src/Calc.php": D("""
        <?php

        class Calc
        {
            public function add(int $a, int $b): int
            {
                return $a + $b + 1;
            }

            public function div(int $a, int $b): int
            {
                return intdiv($a, $b);
            }
        }
        """),
    "tests/CalcTest.php": D("""
        <?php

        use PHPUnit\\Framework\\TestCase;

        require_once __DIR__ . '/../src/Calc.php';

        final class CalcTest extends TestCase
        {
            public function testAdd(): void
            {
                $this->assertSame(4, (new Calc())->add(2, 2));
            }

            public function testDiv(): void
            {
                $this->assertSame(0, (new Calc())->div(1, 0));
            }

            public function testOk(): void
            {
                $this->assertTrue(true);
            }
        }
        """),
}
add("phpunit", "failure_and_error", fs, ["phpunit", "tests"],
    facts(["CalcTest::testAdd", "CalcTest::testDiv"], "ExpectationFailedException",
          "Failed asserting that 5 is identical to 4.", at(fs, "tests/CalcTest.php", "assertSame(4"), 2))

# --------------------------------------------------------------------------
# javac (no build tool: Maven Central is unreachable)
# --------------------------------------------------------------------------
fs = {
    "src/Main.java": D("""
        import java.util.List;

        public class Main {
            static int total(List<Integer> xs) {
                int sum = 0;
                for (int x : xs) sum += x;
                return sum;
            }

            public static void main(String[] args) {
                String count = total(List.of(1, 2));
                System.out.println(count.length() + undefinedVar);
            }
        }
        """),
}
add("javac", "compile_error", fs, ["javac", "-d", "out", "src/Main.java"],
    facts([], "error", "incompatible types: int cannot be converted to String",
          at(fs, "src/Main.java", "String count = total"), 2), version=["javac", "-version"])

# --------------------------------------------------------------------------
# shell / environment failures
# --------------------------------------------------------------------------
fs = {"README": "empty project\n"}
add("shell", "command_not_found_sh", fs, ["sh", "-c", "nonexistent-tool --check"],
    facts([], "not found", "nonexistent-tool: not found", None, None),
    version="dpkg-query -W -f='dash ${Version}' dash")
add("shell", "command_not_found_bash", fs, ["bash", "-c", "nonexistent-tool --check"],
    facts([], "command not found", "nonexistent-tool: command not found", None, None))
fs = {"package.json": '{\n  "name": "noscripts",\n  "private": true,\n  "scripts": {}\n}\n'}
add("shell", "npm_missing_script", fs, ["npm", "test"],
    facts([], "Missing script", 'Missing script: "test"', None, None))
