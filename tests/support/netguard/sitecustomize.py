"""Loaded by every Python process the tests start (conftest.py puts this folder on their
PYTHONPATH): the loopback-only guard of loopback_only.py."""

import loopback_only

loopback_only.install()
