"""A Cascade run once: each stage through processes -> parsers -> classify -> Verdict; subsets, affected tests, the verification cache, flaky tests, declared acceptance."""
