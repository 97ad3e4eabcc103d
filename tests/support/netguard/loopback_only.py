"""The tests' network guard: no socket of a test, nor of a process a test starts, may
connect anywhere but the loopback interface.

An endpoint left unset by mistake would otherwise send the test key to the real OpenAI
API. ``install()`` wraps ``socket.socket.connect`` and ``connect_ex`` so that a connection
to any other address fails at once with ``ConnectionRefusedError``, before a packet is
sent, and says so on stderr; conftest.py installs it in the test process, and this
folder's sitecustomize.py in every Python process the tests start (conftest.py puts the
folder first on their PYTHONPATH).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

REFUSED = "gb test guard: refused a connection off the loopback interface to"


def allowed(family: int, address: Any) -> bool:
    """Loopback addresses and Unix sockets only."""
    if family not in (socket.AF_INET, socket.AF_INET6):
        return True
    host = address[0] if isinstance(address, tuple) else address
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:  # a name: connect() would resolve it, so refuse all but localhost
        return str(host).lower() == "localhost"


def install() -> None:
    if getattr(socket.socket.connect, "loopback_only", False):
        return
    plain_connect, plain_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def refuse(sock: socket.socket, address: Any) -> None:
        print(f"{REFUSED} {address!r}", file=sys.stderr)
        raise ConnectionRefusedError(f"{REFUSED} {address!r}")

    def connect(sock: socket.socket, address: Any) -> None:
        if not allowed(sock.family, address):
            refuse(sock, address)
        plain_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if not allowed(sock.family, address):
            refuse(sock, address)
        return plain_connect_ex(sock, address)

    connect.loopback_only = connect_ex.loopback_only = True  # type: ignore[attr-defined]
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
