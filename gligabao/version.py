"""The version of gligabao and the name it is installed under, for the modules that name them
(gligabao/__init__.py holds the version)."""

from gligabao import __version__

# The name on the package index: `gligabao` there is an unrelated client for a server of that
# name, so gb is published as this one; `import gligabao` and the `gb` command are unchanged.
# Messages that tell a user what to install name it.
DISTRIBUTION = "gligabao-gb"

__all__ = ["DISTRIBUTION", "__version__"]
