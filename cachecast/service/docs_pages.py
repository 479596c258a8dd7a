"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) served with their assets from this server.

FastAPI's own pages load Swagger UI and ReDoc from a CDN: without network they are blank.
Here the pages are FastAPI's, pointed at the same assets shipped inside the
``fastapi-offline`` package (its ``static`` folder: ``swagger-ui-bundle.js``,
``swagger-ui.css``, ``redoc.standalone.js``, ``favicon.png``), served read-only under
``/docs-assets``. Only those four files are served, by name.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from cachecast.service.problems import ProblemError

logger = logging.getLogger(__name__)

ASSETS_PREFIX = "/docs-assets"
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}


def assets_folder() -> Path | None:
    """The folder holding the assets inside the installed ``fastapi-offline`` package (None
    where it is not installed)."""
    try:
        return Path(str(resources.files("fastapi_offline") / "static"))
    except ModuleNotFoundError:
        return None


def install(app: FastAPI) -> None:
    """Add ``/docs``, ``/redoc`` and their assets to ``app`` (built with ``docs_url=None``
    and ``redoc_url=None``). Without the package (an install that skipped a dependency),
    FastAPI's own pages, which need network, with a warning in the log."""
    folder = assets_folder()
    title = f"{app.title} API"
    if folder is None:
        logger.warning("fastapi-offline is not installed: /docs and /redoc load from a CDN")
        folder = Path(".")
        prefix = None
    else:
        prefix = ASSETS_PREFIX

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        if prefix is None:
            return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=title)
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            swagger_js_url=f"{prefix}/swagger-ui-bundle.js",
            swagger_css_url=f"{prefix}/swagger-ui.css",
            swagger_favicon_url=f"{prefix}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        if prefix is None:
            return get_redoc_html(openapi_url=app.openapi_url or "/openapi.json", title=title)
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            redoc_js_url=f"{prefix}/redoc.standalone.js",
            redoc_favicon_url=f"{prefix}/favicon.png",
            with_google_fonts=False,
        )

    @app.get(ASSETS_PREFIX + "/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        media_type = _ASSETS.get(name)
        if media_type is None or prefix is None:
            raise ProblemError(404, "Not found", f"no asset {name!r}")
        return FileResponse(folder / name, media_type=media_type)
