"""``/docs`` and ``/redoc`` work without network (issue 29, point 7): their pages load Swagger
UI and ReDoc from this server, and a real headless chromium with every other host
unreachable renders the operations."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.predictions.test_html_report import FLAGS, chromium
from tests.service.conftest import make_settings, open_client
from tests.service.server import Server

pytestmark = pytest.mark.anyio


async def test_pages_name_only_local_assets(migrated_db_url: str) -> None:
    async for client in open_client(make_settings(migrated_db_url)):
        for page in ("/docs", "/redoc"):
            response = await client.get(page)
            assert response.status_code == 200
            sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
            assert sources and all(s.startswith("/") for s in sources), sources
            for source in sources:
                if source.startswith("/docs-assets/"):
                    asset = await client.get(source)
                    assert asset.status_code == 200 and len(asset.content) > 1000, source
        assert (await client.get("/docs-assets/../app.py")).status_code == 404
        assert (await client.get("/docs-assets/secret.txt")).status_code == 404


def _dom(url: str, work: Path) -> str:
    # Any host but 127.0.0.1 is unreachable: a page that needs a CDN renders blank.
    rules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    done = subprocess.run(
        [
            chromium(),
            *FLAGS,
            rules,
            "--virtual-time-budget=15000",
            f"--user-data-dir={work}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return done.stdout


def test_a_browser_without_network_renders_both(migrated_db_url: str, tmp_path: Path) -> None:
    server = Server(migrated_db_url, tmp_path / "server.log")
    try:
        server.wait_ready()
        swagger = _dom(f"{server.base_url}/docs", tmp_path / "swagger")
        # Swagger UI lists each operation by path once it has rendered the schema.
        assert "/v1/prices" in swagger and "/v1/estimates" in swagger
        redoc = _dom(f"{server.base_url}/redoc", tmp_path / "redoc")
        assert "Price one request" in redoc and "/v1/prices" in redoc
        assert httpx.get(f"{server.base_url}/docs", timeout=10).status_code == 200
    finally:
        server.stop()
