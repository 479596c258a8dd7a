"""Image sizes read from the bytes a request carries, and Claude's documented token count.

Anthropic documents an image's cost as about ``width * height / 750`` tokens, after an image
whose long edge exceeds 1,568 pixels or whose count exceeds about 1,600 tokens is scaled down
(aspect ratio kept) to fit (docs/predictions.md, "Images"). Where a request carries the image
inline (base64), its pixel size is read from the header of a PNG, JPEG, GIF or WebP file; any
other source (a URL, a file id, bytes we cannot read) keeps the fixed estimate.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

MAX_LONG_EDGE = 1568  # pixels: a longer edge is scaled down first
MAX_TOKENS = 1600  # about: a larger image is scaled down to about this many tokens
PIXELS_PER_TOKEN = 750
MAX_HEADER_BYTES = 1 << 20  # a JPEG's size marker lies in its first segments


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, WebP or JPEG header; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return _positive(width, height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return _positive(width, height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        return _webp(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg(data[:MAX_HEADER_BYTES])
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":  # 24-bit width-1 and height-1
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return _positive(width, height)
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and data[20:21] == b"\x2f" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    return None


# Start-of-frame markers (baseline, progressive, lossless...): not DHT (C4), JPG (C8), DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 <= len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            index += 2
            continue
        length = struct.unpack(">H", data[index + 2 : index + 4])[0]
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return _positive(width, height)
        if length < 2:
            return None
        index += 2 + length
    return None


def claude_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``width`` x ``height`` image for Claude: scaled to fit the long-edge and
    token limits first, then ``width * height / 750`` rounded up."""
    scale = min(1.0, MAX_LONG_EDGE / max(width, height))
    pixels = width * height * scale * scale
    if pixels / PIXELS_PER_TOKEN > MAX_TOKENS:
        pixels = MAX_TOKENS * PIXELS_PER_TOKEN
    return max(1, math.ceil(pixels / PIXELS_PER_TOKEN))


def base64_image_tokens(encoded: str) -> int | None:
    """Claude's tokens for a base64 image; None where its size cannot be read."""
    head = encoded[: 4 * (MAX_HEADER_BYTES // 3)]
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return None
    size = image_dimensions(data)
    return None if size is None else claude_image_tokens(*size)
