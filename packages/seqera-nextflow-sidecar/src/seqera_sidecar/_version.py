"""The one place the package version is written (hatch reads it from here)."""

__version__ = "0.1.0"
