"""The Python front-end: one LibCST parse and one traversal per file, then small rules."""
