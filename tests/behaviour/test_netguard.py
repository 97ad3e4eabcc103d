"""The tests' own network guard (tests/support/netguard): nothing a test runs can reach a network
beyond loopback, so a regression that drops an endpoint can never send the test key to a
real API."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.support.netguard.loopback_only import allowed


def test_only_loopback_addresses_are_allowed() -> None:
    assert allowed(socket.AF_INET, ("127.0.0.1", 443))
    assert allowed(socket.AF_INET, ("127.8.9.10", 80))
    assert allowed(socket.AF_INET6, ("::1", 443, 0, 0))
    assert allowed(socket.AF_INET, ("localhost", 80))
    assert allowed(socket.AF_UNIX, "/tmp/some.sock")
    for host in ("api.openai.com", "162.159.140.245", "10.0.0.1", "192.168.1.1", "0.0.0.0"):
        assert not allowed(socket.AF_INET, (host, 443)), host
    assert not allowed(socket.AF_INET6, ("2606:4700::6810:1", 443, 0, 0))


def test_the_guard_is_installed_here_and_in_every_python_process_a_test_starts() -> None:
    assert getattr(socket.socket.connect, "loopback_only", False)
    code = "import socket; print(getattr(socket.socket.connect, 'loopback_only', False))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_loopback_still_connects(server) -> None:
    host, port = server.base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5):
        pass
