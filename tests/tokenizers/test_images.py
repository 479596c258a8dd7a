"""Inline images counted by their pixel size (Claude: about width x height / 750 tokens after
scaling to a 1,568-pixel long edge and about 1,600 tokens), and Bedrock Converse text
documents counted as their text.

Headers are built here byte by byte from the file formats' specifications (PNG IHDR, GIF
logical screen descriptor, JPEG SOF0, WebP VP8X); framing arithmetic as in
test_anthropic_caching: a framed block is 1 + 1 (role) + 1 + content + 1 tokens and the reply
priming 3.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from cachecast.tokenizers import read_records
from cachecast.tokenizers.render.images import (
    base64_image_tokens,
    claude_image_tokens,
    image_dimensions,
)


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 3


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x01\x01\x00" + b"\x00" * 6
    sof0 = b"\xff\xc0" + struct.pack(">HBHH", 11, 8, height, width) + b"\x01\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def webp(width: int, height: int) -> bytes:
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    chunk = b"VP8X" + struct.pack("<I", 10) + b"\x00" * 4 + size
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


@pytest.mark.parametrize("build", [png, gif, jpeg, webp])
def test_dimensions_from_each_header(build: Any) -> None:
    assert image_dimensions(build(597, 566)) == (597, 566)


def test_unknown_bytes_have_no_dimensions() -> None:
    assert image_dimensions(b"not an image") is None
    assert image_dimensions(b"\xff\xd8\xff") is None  # a JPEG cut before any frame
    assert base64_image_tokens("***") is None


def test_claude_counts() -> None:
    # 200 x 200 = 40,000 px / 750 = 53.3 -> 54; 597 x 566 = 337,902 / 750 = 450.5 -> 451.
    assert claude_image_tokens(200, 200) == 54
    assert claude_image_tokens(597, 566) == 451
    # 1,000 x 1,000 = 1,000,000 / 750 = 1,333.3 -> 1,334 (under both limits).
    assert claude_image_tokens(1000, 1000) == 1334
    # 3,000 x 1,500: long edge to 1,568 -> 1,568 x 784 = 1,229,312 px = 1,639 tokens, over
    # about 1,600: scaled to 1,600.
    assert claude_image_tokens(3000, 1500) == 1600


def _run(record: dict[str, Any]) -> Any:
    errors: list[Any] = []
    (request,) = list(read_records([record], "mem.jsonl", errors=errors))
    assert errors == []
    return request


def test_an_anthropic_inline_image_counts_its_pixels() -> None:
    data = base64.b64encode(png(200, 200)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    record = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [image]}]}
    # One framed block around 54 image tokens (1 + 1 + 1 + 54 + 1 = 58), then the priming 3.
    assert _run(record).input_tokens == 58 + 3
    # A URL source has no bytes to size: the fixed estimate of 1,600.
    image["source"] = {"type": "url", "url": "https://example.com/a.png"}
    assert _run(record).input_tokens == 4 + 1600 + 3


def test_converse_text_documents_count_their_text_and_images_their_pixels() -> None:
    hello = base64.b64encode(b"hello world").decode()  # "hello world": 2 tokens
    document = {"document": {"format": "txt", "name": "d", "source": {"bytes": hello}}}
    image = {"image": {"format": "gif", "source": {"bytes": base64.b64encode(gif(200, 200))}}}
    image["image"]["source"]["bytes"] = image["image"]["source"]["bytes"].decode()
    record = {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": [document, image]}],
        "inferenceConfig": {},
    }
    # Each content block is its own framed part: (4 + 2) + (4 + 54), then the priming 3.
    assert _run(record).input_tokens == 6 + 58 + 3
    # A PDF is no text: the fixed estimate.
    document["document"]["format"] = "pdf"
    assert _run(record).input_tokens == (4 + 1600) + 58 + 3
