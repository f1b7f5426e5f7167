"""cargo (build, test, clippy) cases."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# cargo
# --------------------------------------------------------------------------
CARGO_TOML = D("""
    [package]
    name = "glcap"
    version = "0.1.0"
    edition = "2021"

    [dependencies]
    """)
CARGO_V = ["cargo", "--version"]


def C(files: dict[str, str]) -> dict[str, str]:
    out = {"Cargo.toml": CARGO_TOML}
    out.update({k: D(v) for k, v in files.items()})
    return out


fs = C({
    "src/lib.rs": """
        pub fn add(a: i32, b: i32) -> i32 {
            a - b
        }

        pub fn words(s: &str) -> Vec<String> {
            s.split(' ').map(|w| w.to_string()).collect()
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn adds() {
                assert_eq!(add(2, 2), 4);
            }

            #[test]
            fn splits_words() {
                assert_eq!(words("a  b"), vec!["a".to_string(), "b".to_string()], "double space");
            }

            #[test]
            fn passes() {
                assert!(add(1, 0) == 1);
            }
        }
        """,
})
add("cargo", "test_assert_eq", fs, ["cargo", "test"],
    facts(["tests::adds", "tests::splits_words"], "panic", "assertion `left == right` failed",
          at(fs, "src/lib.rs", "assert_eq!(add(2, 2), 4);"), 2), version=CARGO_V, timeout=300)
add("cargo", "test_quiet", fs, ["cargo", "test", "-q"],
    facts(["tests::adds", "tests::splits_words"], "panic", "assertion `left == right` failed",
          at(fs, "src/lib.rs", "assert_eq!(add(2, 2), 4);"), 2), version=CARGO_V, timeout=300)

# assert_eq! of long values (issue 37): two 400-character Debug lines that differ in one field far
# from both ends; cut at a fixed length or in the middle they read the same
fs = C({
    "src/lib.rs": """
        #[derive(Debug, PartialEq)]
        pub struct Server {
            pub name: String,
            pub hosts: Vec<String>,
            pub port: u16,
            pub tags: Vec<String>,
        }

        pub fn parse(line: &str) -> Server {
            let mut parts = line.split(';');
            let name = parts.next().unwrap_or("").to_string();
            let hosts = parts.next().unwrap_or("").split(',').map(String::from).collect();
            let port = parts.next().unwrap_or("0").parse::<u16>().unwrap_or(0) + 1;
            let tags = parts.next().unwrap_or("").split(',').map(String::from).collect();
            Server { name, hosts, port, tags }
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            fn hosts() -> Vec<String> {
                (1..=12).map(|i| format!("backend-{i:02}.eu-west.example.internal")).collect()
            }

            fn tags() -> Vec<String> {
                (1..=8).map(|i| format!("release-channel-{i}")).collect()
            }

            #[test]
            fn parses_a_server_line() {
                let line = format!("api;{};8080;{}", hosts().join(","), tags().join(","));
                let expected = Server { name: "api".into(), hosts: hosts(), port: 8080, tags: tags() };
                assert_eq!(parse(&line), expected);
            }
        }
        """,
})
add("cargo", "test_assert_eq_long", fs, ["cargo", "test"],
    facts(["tests::parses_a_server_line"], "panic", "assertion `left == right` failed",
          at(fs, "src/lib.rs", "assert_eq!(parse(&line), expected);"), 1), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub mod parser;

        #[cfg(test)]
        mod tests {
            use super::parser::header;

            #[test]
            fn reads_header() {
                assert_eq!(header(&[]), 7);
            }
        }
        """,
    "src/parser.rs": """
        pub fn header(bytes: &[u8]) -> u8 {
            let version = bytes[3];
            version
        }

        pub fn parse_port(s: &str) -> u16 {
            s.parse().unwrap()
        }
        """,
    "tests/integration.rs": """
        use glcap::parser::parse_port;

        #[test]
        fn port_from_text() {
            assert_eq!(parse_port("80a"), 80);
        }

        #[test]
        #[should_panic(expected = "boom")]
        fn expects_panic() {
            let _ = parse_port("1");
        }
        """,
})
add("cargo", "test_panic", fs, ["cargo", "test", "--no-fail-fast"],
    facts(["tests::reads_header", "port_from_text", "expects_panic"], "panic",
          "index out of bounds: the len is 0 but the index is 3", at(fs, "src/parser.rs", "let version = bytes[3];"), 3),
    version=CARGO_V, timeout=300)
add("cargo", "test_panic_backtrace", fs, ["cargo", "test", "--no-fail-fast"],
    facts(["tests::reads_header", "port_from_text", "expects_panic"], "panic",
          "index out of bounds: the len is 0 but the index is 3", at(fs, "src/parser.rs", "let version = bytes[3];"), 3),
    version=CARGO_V, timeout=300, env={"RUST_BACKTRACE": "1"})
fs = C({
    "src/lib.rs": """
        pub fn checked() -> bool {
            true
        }

        #[cfg(test)]
        mod tests {
            #[test]
            fn fine() {
                assert!(super::checked());
            }

            #[test]
            fn aborts() {
                std::process::abort();
            }
        }
        """,
})
add("cargo", "test_abort", fs, ["cargo", "test"],
    facts(["tests::aborts"], "SIGABRT", "signal: 6, SIGABRT", at(fs, "src/lib.rs", "std::process::abort();"), 1,
          killed=True), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn poke() -> i32 {
            let p: *mut i32 = std::ptr::null_mut();
            unsafe { p.write_volatile(1) };
            0
        }

        #[cfg(test)]
        mod tests {
            #[test]
            fn segfaults() {
                assert_eq!(super::poke(), 0);
            }
        }
        """,
})
add("cargo", "test_sigsegv", fs, ["cargo", "test"],
    facts(["tests::segfaults"], "SIGSEGV", "signal: 11, SIGSEGV", at(fs, "src/lib.rs", "p.write_volatile(1)"), 1,
          killed=True), version=CARGO_V, timeout=300)
fs = C({
    "src/main.rs": """
        fn parse(n: &str) -> i32 {
            n.len()
        }

        fn main() {
            let total: i32 = "five";
            println!("{} {}", total, parse("x"));
        }
        """,
})
add("cargo", "build_e0308", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "    n.len()"), 2),
    version=["rustc", "--version"], requires=["cargo", "rustc"], timeout=300)
fs = C({
    "src/main.rs": """
        fn main() {
            let mut scores = vec![1, 2, 3];
            let first = &scores[0];
            scores.push(4);
            println!("{}", first);

            let name = String::from("ada");
            let moved = name;
            println!("{} {}", name, moved);
        }
        """,
})
add("cargo", "build_borrow", fs, ["cargo", "build"],
    facts(["E0502", "E0382"], "E0502",
          "cannot borrow `scores` as mutable because it is also borrowed as immutable",
          at(fs, "src/main.rs", "scores.push(4);"), 2),
    version=["rustc", "--version"], requires=["cargo", "rustc"], timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn double(x: i32) -> i32 {
            x * 2
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn doubles() {
                assert_eq!(tripple(2), 6);
            }
        }
        """,
})
add("cargo", "test_compile_error", fs, ["cargo", "test"],
    facts(["E0425"], "E0425", "cannot find function `tripple` in this scope",
          at(fs, "src/lib.rs", "assert_eq!(tripple(2), 6);"), 1), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn is_empty_list(v: &Vec<i32>) -> bool {
            return v.len() == 0;
        }

        pub fn sum(v: &[i32]) -> i32 {
            let mut total = 0;
            for i in 0..v.len() {
                total = total + v[i];
            }
            total
        }
        """,
})
add("cargo", "clippy_warnings", fs, ["cargo", "clippy"],
    facts(["clippy::ptr_arg", "clippy::needless_return", "clippy::len_zero", "clippy::needless_range_loop"],
          "warning", "writing `&Vec` instead of `&[_]` involves a new object where a slice will do",
          at(fs, "src/lib.rs", "pub fn is_empty_list"), None),
    version=["cargo", "clippy", "--version"], requires=["cargo", "cargo-clippy"], timeout=300)
add("cargo", "clippy_deny", fs, ["cargo", "clippy", "--", "-D", "warnings"],
    facts(["clippy::ptr_arg", "clippy::needless_return", "clippy::len_zero", "clippy::needless_range_loop"],
          "error", "writing `&Vec` instead of `&[_]` involves a new object where a slice will do",
          at(fs, "src/lib.rs", "pub fn is_empty_list"), None),
    version=["cargo", "clippy", "--version"], requires=["cargo", "cargo-clippy"], timeout=300)

# the same error once per macro expansion: rustc prints it three times
fs = {
    "Cargo.toml": CARGO_TOML,
    "src/main.rs": D("""
        macro_rules! check {
            ($v:expr) => {
                let _n: i32 = $v.len();
            };
        }

        fn main() {
            check!("a");
            check!("bb");
            check!("ccc");
        }
        """),
}
add("cargo", "build_macro_repeat", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "let _n: i32"), 1), timeout=300)

# a note that points into the toolchain's own library (/rustc/<hash>/library/...)
fs = {
    "Cargo.toml": CARGO_TOML,
    "src/main.rs": D("""
        fn main() {
            let v: Vec<i32> = Vec::with_capacity("3");
            println!("{}", v.len());
        }
        """),
}
add("cargo", "build_std_note", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "with_capacity"), 1), timeout=300)
