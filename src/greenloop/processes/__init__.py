"""Running one command: process (capture, cap, time out, kill the group) and orphans (what escaped the group)."""
