"""The errors `gb serve` answers, as JSON `{"error": {"code", "message"}}` with the
status the API uses; a service error gets the status of its kind."""

from __future__ import annotations

from typing import Any

from gligabao.service.failures import kind_of

__all__ = ["Refusal", "status_of"]

# A service error's kind -> (status, code).
_BY_KIND = {
    "bad_input": (400, "bad_request"),
    "not_found": (404, "not_found"),
    "llm": (502, "llm_failed"),
    "busy": (503, "busy"),
    "config": (500, "server_config"),
    "stopped": (499, "client_closed"),  # nginx's status for a client that went away
    "failure": (500, "failed"),
}


class Refusal(Exception):
    """A request answered with an error status and one line saying why."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def status_of(exc: BaseException) -> tuple[int, str]:
    """The status and code of an error the service raised."""
    return _BY_KIND[kind_of(exc)]


def bad(message: str) -> Refusal:
    return Refusal(400, "bad_request", message)
