"""Running a real `gb` process that file permissions apply to, even when the tests run
as root (as in a container), where chmod stops nobody.

``as_user()`` is a ``preexec_fn``: in a root process it gives up, for good (the bounding
set too, so that exec does not give them back), the capabilities that let root read and
write any file whatever its mode (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH); in any other
process it does nothing. ``permissions_apply()`` says whether that works here: a test
that needs it skips, with the reason, where it does not.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CAPABILITY_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP = 24
_DAC_CAPABILITIES = (1, 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def as_user() -> None:
    """preexec_fn: drop root's power over file modes; nothing for another user."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _DAC_CAPABILITIES:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
    header = _Header(_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    mask = ~sum(1 << cap for cap in _DAC_CAPABILITIES) & 0xFFFFFFFF
    for field in ("effective", "permitted", "inheritable"):
        setattr(data[0], field, getattr(data[0], field) & mask)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def permissions_apply() -> bool:
    """Whether a process started with ``as_user`` is refused a write to a folder of mode
    0o555 (false where the capabilities cannot be dropped, or the file system ignores
    modes)."""
    with tempfile.TemporaryDirectory() as top:
        folder = Path(top, "ro")
        folder.mkdir()
        folder.chmod(0o555)
        try:
            probe = subprocess.run(
                [sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"],
                preexec_fn=as_user,
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            folder.chmod(0o755)
        return probe.returncode != 0 and b"PermissionError" in probe.stderr
