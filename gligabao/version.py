"""The version of gligabao, apart so that anything may name it without importing more."""

__version__ = "0.1.0"
