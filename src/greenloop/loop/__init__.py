"""The fix loop: gate, policy, trust of green, history, the run's state in git (pre-flight, run lock, checkpoints, rollback, squash, recover, the record)."""
