"""The version of gligabao, for the modules that name it (gligabao/__init__.py holds it)."""

from gligabao import __version__

__all__ = ["__version__"]
