"""Bounded decoders: what a small file may make a reader build, checked while it is built.

A few hundred bytes of YAML can name a node that expands a billion times (anchors and
aliases: "billion laughs"), a 2 MB gzip body can inflate to gigabytes, and a ``len=1e9`` in a
placeholder can ask for a gigabyte of filler. Every reader decodes through these functions,
so the bound is checked *before* (or while) the data is made, never after
(docs/limits.md, "Decoders"):

- :func:`load_yaml`: YAML with anchors and aliases allowed (PyYAML writes ``&id001`` for an
  object that appears twice, and vcrpy cassettes carry them), but every alias counted as the
  whole subtree it stands for: the expanded node count and scalar characters are bounded, a
  self-referencing alias is refused. The document is built only after the count passes.
- :func:`decompress`: gzip, zlib/deflate, and zstd or brotli where their packages are
  installed, with a ceiling on the output, read in pieces so that the ceiling is met before
  the memory is.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import yaml

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError
from cachecast.core.limits import current, exceeded

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Output is produced in pieces of this size, so that a bomb is stopped within one piece of
# its ceiling (zlib's ``max_length``).
_PIECE = 1 << 20


class YamlError(ValueError):
    """The text is not YAML (the reader names its file); ``line`` is 1-based where known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def load_yaml(
    text: str, *, source: str, loader: type[yaml.SafeLoader] | None = None
) -> tuple[Any, yaml.Node | None]:
    """The document in ``text`` and its root node (for line numbers), with aliases counted.
    ``loader``: a subclass of the safe loader with constructors of its own (a cassette's
    ``!binary`` tag); the safe loader by default.

    Raises :class:`YamlError` for text that is not YAML or holds a cyclic alias, and
    :class:`~cachecast.core.errors.LimitExceededError` when the document, every alias
    expanded, has more nodes than ``max_yaml_nodes`` or more scalar characters than
    ``max_yaml_chars`` (both in docs/limits.md).
    """
    _count_written_nodes(text, loader or _Loader, source)
    parser = (loader or _Loader)(text)
    try:
        try:
            node = parser.get_single_node()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise YamlError(str(exc), mark.line + 1 if mark is not None else None) from None
        if node is None:
            return None, None
        _check_expansion(node, source)
        try:
            return parser.construct_document(node), node
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise YamlError(str(exc), mark.line + 1 if mark is not None else None) from None
        except RecursionError:
            raise YamlError("nested too deeply to read") from None
        except (ValueError, OverflowError):
            # A scalar its type cannot hold: an integer of more than 4,300 digits (Python
            # refuses to convert it), a timestamp past year 9999.
            raise YamlError(_unbuildable(node)) from None
    finally:
        parser.dispose()


_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)


def _count_written_nodes(text: str, loader: type[yaml.SafeLoader], source: str) -> None:
    """Refuse a document that writes out more nodes than ``max_yaml_nodes`` before any node
    is built: the parser's events are read one at a time and dropped (a built node costs
    about a kilobyte, so a 5 MB file of ``- 1`` items would take gigabytes to compose before
    the expansion count below could refuse it). Aliases are counted by ``_check_expansion``;
    text that is not YAML is left for the real parse to report with its line."""
    limit = current().max_yaml_nodes
    events = loader(text)
    written = 0
    try:
        while events.check_event():
            event = events.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, _NODE_EVENTS):
                written += 1
                if written > limit:
                    line = event.start_mark.line + 1 if event.start_mark is not None else None
                    raise exceeded(
                        "max_yaml_nodes",
                        written,
                        field=None,
                        location=Location(source=source, line=line),
                        what="a YAML document that writes out (aliases not yet expanded) a"
                        " node count of at least",
                    )
    except yaml.YAMLError:
        return
    finally:
        events.dispose()


def _unbuildable(root: yaml.Node) -> str:
    """Which scalar could not be built, and its line: the first integer of more digits than
    Python converts, else a general reason."""
    pending: list[yaml.Node] = [root]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            digits = node.value.lstrip("+-").replace("_", "")
            if node.tag.endswith(":int") and len(digits) > _MAX_INT_DIGITS:
                line = node.start_mark.line + 1
                return f"an integer of {len(digits):,} digits (line {line})"
        else:
            pending.extend(reversed(_children(node)))
    return "a value its type cannot hold (an integer or a date out of range)"


_MAX_INT_DIGITS = 4300  # what Python converts from text (sys.get_int_max_str_digits)


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Count every node and scalar character as if each alias were copied out; refuse a
    node that contains itself. Iterative (a deep document must not exhaust the stack), and
    memoized by node identity (an alias is the same node object as its anchor), so the count
    costs one visit per distinct node however large the expansion."""
    limits = current()
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, characters) expanded
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            nodes, chars = 1, 0
            for child in _children(node):
                child_nodes, child_chars = sizes[id(child)]
                nodes += child_nodes
                chars += child_chars
            sizes[key] = (nodes, chars)
            _check_sizes(nodes, chars, node, source, limits.max_yaml_nodes, limits.max_yaml_chars)
            continue
        if key in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = (1, len(node.value))
            _check_sizes(
                1, len(node.value), node, source, limits.max_yaml_nodes, limits.max_yaml_chars
            )
            continue
        if key in on_path:
            line = node.start_mark.line + 1
            raise YamlError(f"an alias refers to a node that contains it (line {line})", line)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in on_path:
                line = child.start_mark.line + 1
                raise YamlError(f"an alias refers to a node that contains it (line {line})", line)
            if child_key not in sizes:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_sizes(
    nodes: int, chars: int, node: yaml.Node, source: str, max_nodes: int, max_chars: int
) -> None:
    location = Location(source=source, line=node.start_mark.line + 1)
    if nodes > max_nodes:
        raise exceeded(
            "max_yaml_nodes",
            nodes,
            field=None,
            location=location,
            what="a YAML document whose aliases expand to a node count of",
        )
    if chars > max_chars:
        raise exceeded(
            "max_yaml_chars",
            chars,
            field=None,
            location=location,
            what="a YAML document whose aliases expand to a text length of",
        )


def decompress(
    data: bytes, encoding: str, *, field: str, location: Location | None = None
) -> bytes:
    """``data`` decoded per ``encoding`` (``gzip``, ``deflate``/``zlib``, ``zstd``, ``br``;
    case-insensitive), at most ``max_decompressed_bytes`` of output.

    Raises :class:`~cachecast.core.errors.RecordFieldError` naming ``field`` for data that
    does not decode (or an encoding whose package is not installed) and
    :class:`~cachecast.core.errors.LimitExceededError` when the output would pass the limit.
    """
    name = encoding.strip().lower()
    limit = current().max_decompressed_bytes
    try:
        if name in ("gzip", "x-gzip"):
            return _zlib_bounded(data, zlib.MAX_WBITS | 16, limit, field, location)
        if name in ("deflate", "zlib"):
            try:
                return _zlib_bounded(data, zlib.MAX_WBITS, limit, field, location)
            except zlib.error:  # "deflate" as sent by some servers: raw, no zlib header
                return _zlib_bounded(data, -zlib.MAX_WBITS, limit, field, location)
        if name == "zstd":
            return _zstd_bounded(data, limit, field, location)
        if name == "br":
            return _brotli_bounded(data, limit, field, location)
    except (zlib.error, EOFError, OSError) as exc:
        raise RecordFieldError(field, f"cannot decompress the {name} body: {exc}") from None
    raise RecordFieldError(field, f"unknown content encoding {encoding!r}")


def _zlib_bounded(
    data: bytes, wbits: int, limit: int, field: str, location: Location | None
) -> bytes:
    decoder = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    while True:
        out += decoder.decompress(pending, _PIECE)
        _check_output(len(out), limit, field, location)
        pending = decoder.unconsumed_tail
        if decoder.eof:
            rest = decoder.unused_data
            if wbits & 16 and rest[:2] == b"\x1f\x8b":
                # Another gzip member follows: concatenated members are one gzip stream.
                decoder = zlib.decompressobj(wbits)
                pending = rest
                continue
            return bytes(out)
        if not pending:
            out += decoder.flush(_PIECE)
            _check_output(len(out), limit, field, location)
            if not decoder.eof:
                raise zlib.error("the compressed data ends early")
            return bytes(out)


def _zstd_bounded(data: bytes, limit: int, field: str, location: Location | None) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise RecordFieldError(
            field, "zstd-compressed body: install the zstandard package to read it"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(data)
    return _read_pieces(reader.read, limit, field, location)


def _brotli_bounded(data: bytes, limit: int, field: str, location: Location | None) -> bytes:
    try:
        import brotli
    except ImportError:
        raise RecordFieldError(
            field, "brotli-compressed body: install the brotli package to read it"
        ) from None
    decoder = brotli.Decompressor()
    out = bytearray()
    for start in range(0, len(data), 64 * 1024):
        out += decoder.process(data[start : start + 64 * 1024])
        _check_output(len(out), limit, field, location)
    return bytes(out)


def _read_pieces(
    read: Callable[[int], bytes], limit: int, field: str, location: Location | None
) -> bytes:
    out = bytearray()
    while piece := read(_PIECE):
        out += piece
        _check_output(len(out), limit, field, location)
    return bytes(out)


def _check_output(size: int, limit: int, field: str, location: Location | None) -> None:
    if size > limit:
        error: LimitExceededError = exceeded(
            "max_decompressed_bytes",
            size,
            field=field,
            location=location,
            what="a compressed body inflating past a size of",
        )
        raise error
