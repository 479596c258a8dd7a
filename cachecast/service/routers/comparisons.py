"""``POST /v1/comparisons``: mounted and documented; the economics issue fills it in.

Until then it answers 501 with a problem document, so clients and the OpenAPI schema already
see the final address.
"""

from __future__ import annotations

from fastapi import APIRouter

from cachecast.service.problems import ProblemError, problem_responses

router = APIRouter(prefix="/v1", tags=["comparisons"])


@router.post(
    "/comparisons",
    summary="Hosted caching against self-hosted vLLM for a workload (not implemented yet)",
    status_code=200,
    responses=problem_responses(501),
)
def create_comparison() -> None:
    raise ProblemError(
        501,
        "Not implemented",
        "comparisons over HTTP are not implemented on this server yet; "
        "use 'cachecast compare' meanwhile",
        slug="not-implemented",
    )
