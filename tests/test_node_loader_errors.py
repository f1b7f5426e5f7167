"""A module node's own loader did not find (issue 26), on real projects' captured runs.

node reports it from inside its loader: the header is ``node:internal/modules/cjs/loader:1210`` and
``throw err;`` (CJS, ``MODULE_NOT_FOUND``, then ``Require stack:``) or
``node:internal/modules/esm/resolve:283`` (ESM, ``ERR_MODULE_NOT_FOUND … imported from <file>``),
not the project's ``file:line``. The runner exits 1, no signal: a code failure, at the project's
require or import (tests/resources/real/, scripts/conformance/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from greenloop.parsers import ParserInput, parse_output
from greenloop.parsers.model import Failure, ParseResult
from greenloop.processes.process import ProcessResult
from greenloop.verify.classify import Verdict, classify

REAL = Path(__file__).parent / "resources" / "real"


def _parsed(case: str) -> tuple[dict[str, Any], ProcessResult, ParseResult]:
    data = json.loads((REAL / case / "case.json").read_text(encoding="utf-8"))
    argv = tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"])
    stdout, stderr = data["stdout"], data["stderr"]
    run = ProcessResult(
        argv=argv, exit_code=data["exit_code"], signal=None, timed_out=False, duration_s=1.0,
        stdout=stdout, stderr=stderr, merged=stdout + stderr,
    )  # fmt: skip
    inp = ParserInput(
        argv=argv, exit_code=run.exit_code, stdout=stdout, stderr=stderr, merged=run.merged,
        root=data["cwd_placeholder"],
    )  # fmt: skip
    return data, run, parse_output(inp)


def _first(parsed: ParseResult) -> Failure:
    return parsed.errors[0]


def test_node_test_spec_reporter_reports_a_missing_module_as_a_failure_not_a_kill() -> None:
    # fastify/forwarded, `c8 --100 node --test --test-reporter=spec`, test/test.js:4
    # `require('../indx')`: the file is `✖ … 'test failed'` under node's loader's error
    _, run, parsed = _parsed("node-test/forwarded-3")
    verdict = classify(run, parsed, command="npx c8 --100 node --test --test-reporter=spec")
    assert verdict.verdict == Verdict.FAILED
    assert parsed.killed == ()
    first = _first(parsed)
    assert (first.id, first.error_type) == ("test/test.js", "Error")
    assert first.message == "Cannot find module '../indx'"
    assert (first.file, first.line) == ("test/test.js", 4)


def test_node_test_tap_reporter_gives_the_missing_module_and_the_require_that_named_it() -> None:
    # fastify/fast-content-type-parse, `c8 --100 node --test` (TAP, piped): the loader's block is
    # printed as `# ` diagnostics above `not ok 1 - …/test/index.test.js` ('test failed')
    _, _, parsed = _parsed("node-test/fast-content-type-parse-3")
    first = _first(parsed)
    assert first.id == "test/index.test.js"
    assert (first.error_type, first.message) == ("Error", "Cannot find module '../indx'")
    assert (first.file, first.line) == ("test/index.test.js", 4)


def test_a_missing_es_module_is_placed_at_the_file_that_imported_it() -> None:
    # wooorm/trim-lines, `node test.js`: `import … from './indxe.js'` fails before node:test starts;
    # no frame of the project in the stack, only `imported from …/test.js`
    data, run, parsed = _parsed("node-test/trim-lines-3")
    assert classify(run, parsed, command="node test.js").verdict == Verdict.FAILED
    first = _first(parsed)
    assert first.file == "test.js"
    assert first.error_type == "Error"
    assert first.message.startswith("Cannot find module '/tmp/glreal/trim-lines/indxe.js'")
    assert data["exit_code"] == 1


def test_a_missing_package_required_by_the_library_names_the_require_chain() -> None:
    # mcollina/fastq, `nyc … tape test/test.js`: queue.js requires 'reusiyf'; nyc's instrumented
    # line numbers (queue.js:2), the runner's own, and the chain of files that required it
    _, _, parsed = _parsed("tape/fastq-3")
    first = _first(parsed)
    assert (first.error_type, first.message) == ("Error", "Cannot find module 'reusiyf'")
    assert first.file == "queue.js"
    assert first.detail == ("required by queue.js <- test/test.js",)


def test_node_test_tap_names_a_missing_es_module_from_the_diagnostic_lines() -> None:
    # wooorm/markdown-table, `node --test test.js` (TAP): `import … from './indxe.js'`; node's ESM
    # resolver (`node:internal/modules/esm/resolve:283`) prints ERR_MODULE_NOT_FOUND as `# ` lines
    data, run, parsed = _parsed("node-test/markdown-table-3")
    assert classify(run, parsed, command="node --test test.js").verdict == Verdict.FAILED
    first = _first(parsed)
    assert (first.id, first.file, first.error_type) == ("test.js", "test.js", "Error")
    assert first.message == data["facts"]["message"]
    assert "imported from /tmp/glreal/markdown-table/test.js" in first.message


def test_mocha_tap_reporter_places_a_missing_dev_dependency_at_the_test_files_require() -> None:
    # jshttp/range-parser, `mocha --reporter tap`: test/range-parser.js:2 requires 'deep-equla';
    # mocha's yargs rethrows it (`node_modules/yargs/yargs.js:1163`, `else throw err`) before any
    # TAP line: "could not be parsed", the tail
    _, run, parsed = _parsed("mocha/range-parser-3")
    assert classify(run, parsed, command="npx mocha --reporter tap").verdict == Verdict.FAILED
    first = _first(parsed)
    assert (first.error_type, first.message) == ("Error", "Cannot find module 'deep-equla'")
    assert (first.file, first.line) == ("test/range-parser.js", 2)


def test_mocha_tap_reporter_names_a_syntax_error_in_the_module_a_test_file_requires() -> None:
    # range-parser-4: `parsePos(startStr` (index.js:56) ends node while mocha requires the tests
    _, _, parsed = _parsed("mocha/range-parser-4")
    first = _first(parsed)
    assert (first.file, first.line, first.error_type) == ("index.js", 56, "SyntaxError")
    assert first.message == "missing ) after argument list"


def test_a_missing_module_that_mocha_prints_without_nodes_header_is_read_under_npm_test() -> None:
    # jshttp/etag, `npm test` = `mocha --reporter spec …`: index.js:21 `require('crypot')`; mocha's
    # ESM file loader prints the error itself (no `node:internal/…` header, `Require stack:`)
    _, run, parsed = _parsed("mocha/etag-3")
    assert classify(run, parsed, command="npm test").verdict == Verdict.FAILED
    first = _first(parsed)
    assert (first.error_type, first.message) == ("Error", "Cannot find module 'crypot'")
    assert (first.file, first.line) == ("index.js", 21)
    assert first.detail == ("required by index.js <- test/test.js",)
