"""The package version: a leaf, so modules below the package root can read it."""

__version__ = "0.1.0"
