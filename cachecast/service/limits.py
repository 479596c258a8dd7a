"""The request body limit, enforced before and while a body is read.

A declared ``Content-Length`` over the limit is refused before a byte is read; a body sent
without one (chunked) is counted as it streams and refused the moment it passes the limit,
so a client cannot make the service buffer more than the limit.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachecast.core.limits import Limits, limits_in_force
from cachecast.service.problems import Problem, ProblemError, TrackedSend, problem_response
from cachecast.tokenizers import local_tokenizer_directories


def body_too_large(limit: int) -> ProblemError:
    return ProblemError(
        413,
        "Content too large",
        f"the request body exceeds the limit of {limit} bytes (setting max_body_bytes)",
        slug="body-too-large",
        limit_bytes=limit,
    )


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0:
                    await self._refuse(scope, send, 400, "Content-Length is not a number")
                    return
                if declared > limit:
                    await self._send_problem(scope, send, body_too_large(limit))
                    return

        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise body_too_large(limit)
            return message

        tracked = TrackedSend(send)
        try:
            await self.app(scope, counting_receive, tracked)
        except ProblemError as error:
            # Raised by counting_receive in a place no exception handler covered (e.g. while
            # a handler streamed the body itself): answer here if nothing was sent yet.
            if error.status_code != 413 or tracked.started:
                raise
            await self._send_problem(scope, send, error)

    async def _refuse(self, scope: Scope, send: Send, status: int, detail: str) -> None:
        await self._send_problem(scope, send, ProblemError(status, "Bad request", detail))

    @staticmethod
    async def _send_problem(scope: Scope, send: Send, error: ProblemError) -> None:
        problem: Problem = error.to_problem(scope.get("path"))
        await problem_response(problem)(scope, _no_body, send)


class LimitsMiddleware:
    """Run every request under the service's size limits (``cachecast.core.limits``; the settings
    ``max_request_tokens`` ...): the context variable reaches the thread pool as below."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with limits_in_force(self.limits):
            await self.app(scope, receive, send)


# The endpoints whose work grows with what a client sends (a log, a layout, a fleet): each
# request to one holds a slot while it runs.
HEAVY_PATHS = (
    "/v1/estimates",
    "/v1/inspections",
    "/v1/reconciliations",
    "/v1/simulations",
    "/v1/layout-checks",
    "/v1/comparisons",
    "/v1/usage-reports",
)


class HeavyRequestsMiddleware:
    """At most ``slots`` heavy requests (a POST to :data:`HEAVY_PATHS`) run at once in this
    process; one more is answered at once with 503 ``busy`` and ``Retry-After``, before its
    body is read. Health, metrics, jobs and contracts are never held up: the API stays
    responsive while its heavy slots are taken (docs/limits.md, "Concurrency")."""

    def __init__(self, app: ASGIApp, slots: int, retry_after_seconds: int) -> None:
        self.app = app
        self.slots = slots
        self.retry_after = retry_after_seconds
        self.running = 0  # touched on the event loop only: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_heavy(scope):
            await self.app(scope, receive, send)
            return
        if self.running >= self.slots:
            error = ProblemError(
                503,
                "Busy",
                f"{self.slots} heavy requests are running (setting max_concurrent_requests);"
                f" retry after {self.retry_after} s",
                slug="busy",
            )
            problem = error.to_problem(scope.get("path"))
            headers = {"Retry-After": str(self.retry_after)}
            await problem_response(problem, headers)(scope, _no_body, send)
            return
        self.running += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.running -= 1


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


def _is_heavy(scope: Scope) -> bool:
    return (
        scope["type"] == "http"
        and scope.get("method") == "POST"
        and str(scope.get("path", "")).rstrip("/") in HEAVY_PATHS
    )


class NoLocalTokenizersMiddleware:
    """Run every request with local tokenizer directories refused.

    A record or option naming ``hf:PATH`` or an existing path would otherwise make the server
    read its own files; the context variable set here reaches the endpoint and the threadpool
    it runs sync code in.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with local_tokenizer_directories(False):
            await self.app(scope, receive, send)
