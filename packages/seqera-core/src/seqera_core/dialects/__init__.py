"""Parsers and formatters for each engine's and scheduler's resource dialect."""
