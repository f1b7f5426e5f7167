"""``greenloop bench``: seeded single-site bugs in the user's own repository, run through batch.

mutate (candidates from the source, never the tests) -> select (the verifier must fail, trusted)
-> seed (one single-commit repository per mutant, no trace of the original) -> batch -> score.
"""

from __future__ import annotations
