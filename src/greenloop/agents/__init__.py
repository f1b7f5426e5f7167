"""Agents: anything that edits the working tree given a prompt."""
