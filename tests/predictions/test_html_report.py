"""``--html``: the page renders in a real headless browser and shows the report's figures.

Debian's chromium renders the page (screenshot and DOM dump), with no network: background
networking, component updates and sync off, a fresh profile. The screenshot must not be
blank and must show the charts' colours; the rendered DOM's text must carry the figures of
the report (targets, bills, miss causes, the reconciliation). ``.ci/run`` installs chromium
and sets ``CACHECAST_REQUIRE_BROWSER=1``, which makes its absence a failure here.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cachecast.cli.html_report import PALETTE, render_html, write_html
from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.misses import CAUSE_MEANINGS
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.conftest import shared_data

REQUIRE_BROWSER_ENV = "CACHECAST_REQUIRE_BROWSER"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
FOLDER = "recordings/vcr_cassettes/openllmetry"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "no chromium on PATH (apt-get install chromium chromium-driver)"
        if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def render(page: Path, work: Path) -> tuple[str, np.ndarray]:
    """The DOM text and the screenshot (RGB array) of ``page`` in headless chromium."""
    browser = chromium()
    common = [browser, *FLAGS, "--window-size=1100,3200"]
    url = page.resolve().as_uri()
    shot = work / "page.png"
    dom = subprocess.run(
        [*common, f"--user-data-dir={work / 'profile-dom'}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    ).stdout
    subprocess.run(
        [*common, f"--user-data-dir={work / 'profile-shot'}", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=180,
        check=True,
    )
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("RGB"))
    return dom, pixels


def text_of(dom: str) -> str:
    """The visible text of the dumped DOM (tags dropped, whitespace folded)."""
    body = re.sub(r"<style.*?</style>", " ", dom, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


def shows_colour(pixels: np.ndarray, colour: str) -> bool:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return bool((np.abs(pixels.astype(int) - rgb).sum(axis=2) < 12).sum() > 50)


def check_not_blank(pixels: np.ndarray) -> None:
    assert pixels.shape[0] > 500 and pixels.shape[1] > 500
    background = np.array([255, 255, 255])
    drawn = (np.abs(pixels.astype(int) - background).sum(axis=2) > 30).mean()
    assert drawn > 0.02, f"only {drawn:.2%} of the screenshot differs from white"
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20


def dollars(amount: Decimal) -> str:
    """The page's display rule (docs in cachecast.cli.output), written out here: a dollar or
    more in cents with separators; under a dollar at most 4 decimal places, trailing zeros
    dropped down to cents; under $0.0001 two significant digits; half-even."""
    sign = "-" if amount < 0 else ""
    size = abs(amount)
    if size >= 1 or size == 0:
        text = f"{size.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"
    elif size >= Decimal("0.0001"):
        text = f"{size.quantize(Decimal('0.0001'), rounding=ROUND_HALF_EVEN):f}".rstrip("0")
        if len(text.split(".")[1]) < 2:
            text = text.split(".")[0] + "." + text.split(".")[1].ljust(2, "0")
    else:
        digits = -size.adjusted() + 1
        text = f"{size.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN):f}"
    return f"{sign}${text}"


def legend_colours(dom: str) -> list[str]:
    return re.findall(r"class=\"swatch\" style=\"background: ?([^;\"]+)", dom)


def test_estimate_page_in_a_browser(store: ContractStore, tmp_path: Path) -> None:
    path = shared_data(f"{FOLDER}/test_openai_prompt_caching.yaml")
    report = estimate(
        EstimateRequest(
            log=LogInput.of_paths([path]),
            targets=["openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5"],
            at=dt.date(2026, 11, 1),
        ),
        store,
    )
    page = tmp_path / "estimate.html"
    write_html(page, report)
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and " src=" not in html and " href=" not in html
    dom, pixels = render(page, tmp_path)
    text = text_of(dom)
    for target in report.targets:
        assert target.name in text
        assert dollars(target.cost.total) in text
        assert dollars(target.cost_without_cache) in text
        for cause in target.miss_causes:
            assert cause.cause in text and dollars(cause.cost_lost) in text
            assert CAUSE_MEANINGS[cause.cause].split(":")[0] in text  # explained in words
    gpt = report.targets[0]
    assert gpt.reconciliation is not None
    # Numbers for people: at most 4 significant decimal digits, no exponent.
    assert not re.search(r"\d\.0*[1-9]\d{4,}", text) and not re.search(r"\de[+-]\d", text)
    # Every legend has distinct swatch colours, and every series' name (none cut off).
    colours = legend_colours(dom)
    assert len(colours) >= 4 and len(set(colours[:2])) == 2
    assert "with caching" in text and "without caching" in text
    for heading in (
        "Bill per target",
        "Hit rate over time",
        "Tokens and dollars lost by miss cause",
        "Predicted against observed",
    ):
        assert heading in text
    check_not_blank(pixels)
    assert shows_colour(pixels, PALETTE[0]) and shows_colour(pixels, PALETTE[1])


def test_reconcile_page_in_a_browser(store: ContractStore, tmp_path: Path) -> None:
    paths = [
        shared_data(f"{FOLDER}/test_anthropic_prompt_caching_legacy.yaml"),
        shared_data(f"{FOLDER}/test_openai_prompt_caching_async.yaml"),
    ]
    report = reconcile(ReconcileRequest(log=LogInput.of_paths(paths)), store)
    page = tmp_path / "reconcile.html"
    page.write_text(render_html(report), encoding="utf-8")
    dom, pixels = render(page, tmp_path)
    text = text_of(dom)
    assert "Predicted against observed" in text and "provider_best_effort_miss" in text
    summary = report.summary
    assert f"predicted {dollars(summary.predicted_cost)} against observed" in text
    assert dollars(summary.observed_cost) in text
    # The worst mismatches, listed (every row is in --json).
    mismatches = [row for row in report.requests if not row.exact_match]
    assert f"The worst {min(20, len(mismatches))} of {len(mismatches)} mismatches" in text
    worst = max(mismatches, key=lambda row: abs(row.token_error))
    assert f"{Path(worst.source).name}:{worst.line}" in text
    # The scatter is labelled, and its legend says which colour is which.
    assert "predicted cache-read tokens" in text and "observed cache-read tokens" in text
    assert legend_colours(dom)[:2] == [PALETTE[2], PALETTE[1]]
    check_not_blank(pixels)
    assert shows_colour(pixels, PALETTE[2])  # the scatter's exact points
