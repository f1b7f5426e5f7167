"""``greenloop batch``: many loops at once, each in its own clone, resumable, nothing lost.

The folder reads as the pipeline: tasks (parse TASKS.jsonl) -> results (what is done, what to
resume) -> workspace (a fresh clone per task) -> worker (one task: setup + run_loop + its record)
-> executors (a local process pool, or Ray) -> progress -> report.
"""

from __future__ import annotations
