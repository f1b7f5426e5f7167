"""Product output: check and loop results as text, JSON, Markdown, HTML; the terminal's live lines."""
