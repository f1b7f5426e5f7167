"""``greenloop demo`` and what it needs, apart from the pipeline: the bundled project, the scripted
model server (also what the tests run real agent CLIs against) and its wire formats."""
