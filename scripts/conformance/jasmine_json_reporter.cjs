// Ground truth for jasmine (scripts/conformance/node.py): jasmine's own reporter API, as JSON.
// Used as `jasmine --reporter=<this file>`; writes one line `JASMINE-JSON-REPORT {...}` to stderr
// at the end: every spec's fullName, status and failed expectations, the suites' own failures
// (afterAll, a file that failed to load) and the run's overall status.
"use strict";

class JsonReporter {
  constructor() {
    this.specs = [];
    this.suites = [];
  }

  specDone(result) {
    this.specs.push({
      fullName: result.fullName,
      status: result.status,
      failedExpectations: result.failedExpectations.map(pick),
    });
  }

  suiteDone(result) {
    if (result.failedExpectations.length) {
      this.suites.push({ fullName: result.fullName, failedExpectations: result.failedExpectations.map(pick) });
    }
  }

  jasmineDone(result) {
    const report = {
      overallStatus: result.overallStatus,
      incompleteReason: result.incompleteReason || null,
      failedExpectations: (result.failedExpectations || []).map(pick),
      specs: this.specs,
      suites: this.suites,
    };
    process.stderr.write("JASMINE-JSON-REPORT " + JSON.stringify(report) + "\n");
  }
}

function pick(e) {
  return { message: e.message, stack: e.stack || "" };
}

module.exports = JsonReporter;
