"""The package version (a module of its own: every layer may import it, and it imports nothing)."""

__version__ = "0.1.0"
