"""``POST /v1/layout-checks``: mounted and documented; the layout-check issue fills it in.

Until then it answers 501 with a problem document, so clients and the OpenAPI schema already
see the final address.
"""

from __future__ import annotations

from fastapi import APIRouter

from cachecast.service.problems import ProblemError, problem_responses

router = APIRouter(prefix="/v1", tags=["layout checks"])


@router.post(
    "/layout-checks",
    summary="Compare a prompt layout change against a baseline (not implemented yet)",
    status_code=200,
    responses=problem_responses(501),
)
def create_layout_check() -> None:
    raise ProblemError(
        501,
        "Not implemented",
        "layout checks over HTTP are not implemented on this server yet; "
        "use 'cachecast check' meanwhile",
        slug="not-implemented",
    )
