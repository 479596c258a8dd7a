"""Bounded decoders: what a small file may make a reader build, checked while it is built.

A few hundred bytes of YAML can name a node that expands a billion times (anchors and
aliases: "billion laughs"), a 2 MB gzip body can inflate to gigabytes, and a ``len=1e9`` in a
placeholder can ask for a gigabyte of filler. Every reader decodes through these functions,
so the bound is checked *before* (or while) the data is made, never after
(docs/limits.md, "Decoders"):

- :func:`load_yaml`: YAML with anchors and aliases allowed (PyYAML writes ``&id001`` for an
  object that appears twice, and vcrpy cassettes carry them), but every alias counted as the
  whole subtree it stands for: the expanded node count and scalar characters are bounded, a
  self-referencing alias is refused. The document is built straight from the parser's
  events as plain Python values, each node counted as its event arrives; no node tree is
  composed (a composed node with its marks costs about a kilobyte: a 5 MB file of 1.25
  million items took 1.2 GB and 25 s that way).
- :func:`decompress`: gzip, zlib/deflate, zstd and brotli (both dependencies: Node's fetch
  asks for them, so recorded bodies come that way), with a ceiling on the output, read in
  pieces so that the ceiling is met before the memory is.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError
from cachecast.core.limits import current, exceeded

# The parser only (events, no composer): libyaml's where PyYAML was built with it.
_Events: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Output is produced in pieces of this size, so that a bomb is stopped within one piece of
# its ceiling (zlib's ``max_length``).
_PIECE = 1 << 20
_Ceiling = tuple[int, str]  # bytes, and the setting that gives them


class YamlError(ValueError):
    """The text is not YAML (the reader names its file); ``line`` is 1-based where known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass(frozen=True, slots=True)
class YamlDocument:
    """A document read by :func:`load_yaml`: its value and, for each key of a root mapping
    whose value is a sequence, the 1-based line where each item of it starts."""

    data: Any
    item_lines: dict[str, list[int]] = field(default_factory=dict)


_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP, _MERGE_TAG = _TAG + "str", _TAG + "seq", _TAG + "map", _TAG + "merge"
# The scalar types of the safe schema, built by PyYAML's own safe constructors (one
# throwaway node each); a tag outside these is refused, as the safe loader refuses it.
_SCALAR_TAGS = frozenset(
    _TAG + name for name in ("null", "bool", "int", "float", "binary", "timestamp")
)
_INT = _TAG + "int"
# PyYAML's full dumper writes an object it cannot represent as a plain value as a call: vcrpy
# dumping aiohttp's case-insensitive header keys writes
# ``? !!python/object/apply:multidict._multidict.istr [Accept]`` (docs/log-formats.md). Read
# as the call's argument, never called: the file stays data.
_PYTHON_CALLS = (_TAG + "python/object/apply:", _TAG + "python/object/new:")
_PYTHON_TUPLE = _TAG + "python/tuple"
_PYTHON_TEXT = frozenset({_TAG + "python/str", _TAG + "python/unicode"})
# The first characters a plain scalar of an implicit type (null, bool, int, float, timestamp,
# merge, value) can start with; any other plain scalar is a string without a resolver's look.
_RESOLVED_FIRST = frozenset(key for key in Resolver.yaml_implicit_resolvers if key)
_MAX_INT_DIGITS = 4300  # what Python converts from text (sys.get_int_max_str_digits)
# Short scalars are immutable values, built once per distinct text: a cassette repeats its
# header names and values in every interaction.
_CACHED_LENGTH = 128
_CACHE_ENTRIES = 1 << 16


class _Merge:
    """The ``<<`` key of a mapping (YAML's merge key type)."""


_MERGE = _Merge()
_NODES_WORDS = (
    "a YAML document whose nodes, every alias counted as the subtree it names, number at least"
)
_CHARS_WORDS = "a YAML document whose scalars, every alias expanded, hold a text length of at least"
_OPEN = object()  # an anchor whose node is still being built: an alias to it is a cycle


@dataclass(slots=True)
class _Open:
    """A sequence or mapping being built."""

    value: list[Any] | dict[Any, Any]
    anchor: str | None
    nodes: int  # the document's counts when it started
    chars: int
    key: Any = None
    has_key: bool = False
    merges: list[Any] | None = None
    lines: list[int] | None = None  # the items' lines, for a sequence under a root key
    lines_key: str = ""
    call: bool = False  # a !!python/object/apply: or /new: node: read as its argument


def load_yaml(
    text: str,
    *,
    source: str,
    tag_aliases: Mapping[str, str] | None = None,
    local_tags_plain: bool = False,
) -> YamlDocument:
    """The document in ``text``, with aliases counted. ``tag_aliases``: local tags read as a
    standard one (Ruby's ``!binary`` as ``tag:yaml.org,2002:binary``). ``local_tags_plain``:
    any other local tag (``!ruby/struct:VCR::Request``, Syck's ``!str``) read as the plain
    value it tags, a scalar as its text; no object of the tagged class is ever made. With
    it, PyYAML's Python tags are read the same way: ``!!python/object/apply:NAME`` and
    ``!!python/object/new:NAME`` as their argument (a one-item sequence as that item, a
    mapping as its ``args``), ``!!python/tuple`` as a list, ``!!python/str`` and
    ``!!python/unicode`` as text; nothing is imported or called.
    ``item_lines`` holds the lines of the items of a sequence under a root key, and under
    ``""`` those of a root sequence.

    Raises :class:`YamlError` for text that is not YAML, holds a cyclic alias or a value its
    type cannot hold, and :class:`~cachecast.core.errors.LimitExceededError` once the
    document, every alias expanded, has more nodes than ``max_yaml_nodes`` or more scalar
    characters than ``max_yaml_chars`` (both in docs/limits.md), at the event that passes it.
    """
    events = _Events(text)
    try:
        return _Builder(source, tag_aliases or {}, local_tags_plain).read(events)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlError(str(exc), mark.line + 1 if mark is not None else None) from None
    finally:
        events.dispose()


class _Builder:
    """Plain values from parser events, with a running count of nodes and scalar characters
    in which an alias adds the counts its anchor's node had when it was built."""

    def __init__(self, source: str, tag_aliases: Mapping[str, str], local_plain: bool) -> None:
        limits = current()
        self.source = source
        self.tag_aliases = tag_aliases
        self.local_plain = local_plain
        self.max_nodes = limits.max_yaml_nodes
        self.max_chars = limits.max_yaml_chars
        self.nodes = 0
        self.chars = 0
        self.anchors: dict[str, Any] = {}  # name -> (value, nodes, chars) or _OPEN
        self.stack: list[_Open] = []
        self.root: Any = None
        self.item_lines: dict[str, list[int]] = {}
        self.resolver = Resolver()
        self.constructor = SafeConstructor()
        self.cache: dict[tuple[str, str], Any] = {}

    def read(self, events: Any) -> YamlDocument:
        # The loop runs once per node of the file: scalars, the bulk, are handled inline.
        documents = 0
        stack = self.stack
        scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
        starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
        ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
        while events.check_event():
            event = events.get_event()
            kind = type(event)
            if kind is scalar_event:
                text: str = event.value
                self.nodes += 1
                self.chars += len(text)
                if self.nodes > self.max_nodes or self.chars > self.max_chars:
                    self._count(0, 0, _line(event))
                if stack and stack[-1].lines is not None:
                    stack[-1].lines.append(_line(event))
                value = self._scalar(event, text)
                if event.anchor is not None:
                    self._define(event.anchor, _line(event))
                    self.anchors[event.anchor] = (value, 1, len(text))
                if stack and type(stack[-1].value) is list and value is not _MERGE:
                    stack[-1].value.append(value)
                else:
                    self._add(value, _line(event))
            elif kind is alias_event:
                line = _line(event)
                self._item_starts(line)
                self._add(self._alias(event.anchor, line), line)
            elif kind in starts:
                line = _line(event)
                self._item_starts(line)
                self._start(event, kind is yaml.MappingStartEvent, line)
            elif kind in ends:
                self._end(_line(event))
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    line = _line(event)
                    raise YamlError("a second document in the stream", line)
        return YamlDocument(self.root, self.item_lines)

    def _count(self, nodes: int, chars: int, line: int) -> None:
        self.nodes += nodes
        self.chars += chars
        if self.nodes <= self.max_nodes and self.chars <= self.max_chars:
            return  # (once per container and alias: no tuples built on the way through)
        for name, value, limit, what in (
            ("max_yaml_nodes", self.nodes, self.max_nodes, _NODES_WORDS),
            ("max_yaml_chars", self.chars, self.max_chars, _CHARS_WORDS),
        ):
            if value > limit:
                where = Location(source=self.source, line=line)
                raise exceeded(name, value, field=None, location=where, what=what)

    def _define(self, anchor: str, line: int) -> None:
        if anchor in self.anchors:  # as PyYAML's composer: an anchor names one node
            raise YamlError(f"the anchor &{anchor} is defined twice", line)

    def _alias(self, anchor: str, line: int) -> Any:
        entry = self.anchors.get(anchor)
        if entry is None:
            raise YamlError(f"an alias to an undefined anchor *{anchor}", line)
        if entry is _OPEN:
            raise YamlError("an alias refers to a node that contains it", line)
        value, nodes, chars = entry
        self._count(nodes, chars, line)
        return value

    def _start(self, event: Any, mapping: bool, line: int) -> None:
        self._count(1, 0, line)
        tag = self.tag_aliases.get(event.tag, event.tag)
        call = False
        if self.local_plain and tag is not None:
            if tag.startswith("!"):
                tag = None  # a local tag: the plain mapping or sequence it tags
            elif tag.startswith(_PYTHON_CALLS):
                tag, call = None, True
            elif tag == _PYTHON_TUPLE and not mapping:
                tag = None
        if tag not in (None, "!", _MAP if mapping else _SEQ):
            raise YamlError(f"the tag {tag} is not read here", line)
        frame = _Open({} if mapping else [], event.anchor, self.nodes - 1, self.chars)
        frame.call = call
        if event.anchor is not None:
            self._define(event.anchor, line)
            self.anchors[event.anchor] = _OPEN
        if not mapping and not self.stack:
            frame.lines, frame.lines_key = [], ""  # a root sequence (Ruby VCR 1.x)
        if not mapping and len(self.stack) == 1:
            parent = self.stack[0]
            if isinstance(parent.value, dict) and isinstance(parent.key, str):
                frame.lines, frame.lines_key = [], parent.key
        self.stack.append(frame)

    def _end(self, line: int) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.merges is not None and isinstance(value, dict):
            value = _merged(frame.merges, value, line)
        if frame.call:
            value = _call_argument(value)
        if frame.anchor is not None:
            self.anchors[frame.anchor] = (value, self.nodes - frame.nodes, self.chars - frame.chars)
        if frame.lines is not None:
            self.item_lines[frame.lines_key] = frame.lines
        self._add(value, line)

    def _item_starts(self, line: int) -> None:
        if self.stack and self.stack[-1].lines is not None:
            lines = self.stack[-1].lines
            lines.append(line)

    def _add(self, value: Any, line: int) -> None:
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        if isinstance(frame.value, list):
            frame.value.append("<<" if value is _MERGE else value)
        elif not frame.has_key:
            try:
                hash(value)
            except TypeError:
                raise YamlError("a mapping key that is a list or mapping", line) from None
            frame.key, frame.has_key = value, True
        else:
            if frame.key is _MERGE:
                frame.merges = [*(frame.merges or []), value]
            else:
                frame.value[frame.key] = "<<" if value is _MERGE else value
            frame.key, frame.has_key = None, False

    def _scalar(self, event: Any, text: str) -> Any:
        tag = event.tag
        if tag is None and event.implicit[0]:
            if not text or text[0] in _RESOLVED_FIRST:
                if text.isascii() and text.isdigit() and (len(text) == 1 or text[0] != "0"):
                    tag = _INT  # a plain decimal: YAML 1.1's int, built here without a node
                    if len(text) <= _MAX_INT_DIGITS:
                        return int(text)
            else:
                return text  # no implicit type starts with this character: a string
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, text, event.implicit)  # type: ignore[no-untyped-call]
        tag = self.tag_aliases.get(tag, tag)
        if tag == _STR or (
            self.local_plain and ((tag.startswith("!") and tag != "!") or tag in _PYTHON_TEXT)
        ):
            return text  # (a local tag's scalar, a Python string's: its text)
        if tag == _MERGE_TAG:
            return _MERGE
        line = _line(event)
        if tag not in _SCALAR_TAGS:
            raise YamlError(f"the tag {tag} is not read here", line)
        key = (tag, text)
        if len(text) <= _CACHED_LENGTH and key in self.cache:
            return self.cache[key]
        try:
            value = self.constructor.yaml_constructors[tag](
                self.constructor, yaml.ScalarNode(tag, text)
            )
        except yaml.YAMLError as exc:
            raise YamlError(f"{getattr(exc, 'problem', exc)}", line) from None
        except (ValueError, OverflowError):
            # A scalar its type cannot hold: an integer of more digits than Python converts
            # from text, a timestamp past year 9999.
            digits = text.lstrip("+-").replace("_", "")
            if tag == _INT and len(digits) > _MAX_INT_DIGITS:
                reason = f"an integer of {len(digits):,} digits"
            else:
                reason = f"a value its type cannot hold, {tag[len(_TAG) :]}"
            raise YamlError(reason, line) from None
        if len(text) <= _CACHED_LENGTH:
            if len(self.cache) >= _CACHE_ENTRIES:
                self.cache.clear()
            self.cache[key] = value
        return value


def _call_argument(value: Any) -> Any:
    """What a ``!!python/object/apply:`` or ``/new:`` node is read as: its arguments (a
    sequence, or a mapping's ``args``), a single argument as itself (``istr [Accept]`` is the
    header name ``Accept``); a mapping without ``args`` (state only) as it is."""
    if isinstance(value, dict):
        if "args" not in value:
            return value
        value = value["args"]
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def _line(event: Any) -> int:
    return int(event.start_mark.line) + 1


def _merged(merges: list[Any], explicit: dict[Any, Any], line: int) -> dict[Any, Any]:
    """A mapping with merge keys (``<<: *defaults``): the merged mappings' entries, earlier
    ones winning over later ones, then the mapping's own entries over all of them."""
    sources: list[Any] = []
    for merge in merges:
        sources.extend(merge if isinstance(merge, list) else [merge])
    out: dict[Any, Any] = {}
    for source in reversed(sources):
        if not isinstance(source, dict):
            raise YamlError("a merge key (<<) needs a mapping or list of mappings", line)
        out.update(source)
    out.update(explicit)
    return out


def decompress(
    data: bytes, encoding: str, *, field: str, location: Location | None = None
) -> bytes:
    """``data`` decoded per ``encoding`` (``gzip``, ``deflate``/``zlib``, ``zstd``, ``br``;
    case-insensitive), at most ``max_decompressed_bytes`` of output, and at most
    ``max_document_bytes``: a body is held whole and parsed at once, as a JSON document is
    (a 900 MB gzip body under the command line's 1 GB took 2 GB to read).

    Raises :class:`~cachecast.core.errors.RecordFieldError` naming ``field`` for data that
    does not decode (or an encoding whose package is not installed) and
    :class:`~cachecast.core.errors.LimitExceededError` when the output would pass the limit.
    """
    name = encoding.strip().lower()
    limit, setting = _body_ceiling()
    try:
        if name in ("gzip", "x-gzip"):
            return _zlib_bounded(data, zlib.MAX_WBITS | 16, (limit, setting), field, location)
        if name in ("deflate", "zlib"):
            try:
                return _zlib_bounded(data, zlib.MAX_WBITS, (limit, setting), field, location)
            except zlib.error:  # "deflate" as sent by some servers: raw, no zlib header
                return _zlib_bounded(data, -zlib.MAX_WBITS, (limit, setting), field, location)
        if name == "zstd":
            return _zstd_bounded(data, (limit, setting), field, location)
        if name == "br":
            return _brotli_bounded(data, (limit, setting), field, location)
    except (zlib.error, EOFError, OSError) as exc:
        raise RecordFieldError(field, f"cannot decompress the {name} body: {exc}") from None
    raise RecordFieldError(field, f"unknown content encoding {encoding!r}")


def _zlib_bounded(
    data: bytes, wbits: int, limit: _Ceiling, field: str, location: Location | None
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


def zstd_pieces(read: Callable[[int], bytes], piece: int = 1024) -> Iterator[bytes]:
    """The inflated content of zstd frames back to back (RFC 8878), read ``piece`` compressed
    bytes at a time: zstd's densest block (RLE) inflates at most 32,768-fold, so one piece
    gives at most 32 MiB at 1 KiB, and a bomb is stopped by the caller within that of its
    bound. Raises ValueError for data that is not zstd or whose last frame is cut (zstd's own
    stream reader returns a cut frame's bytes without a word)."""
    import zstandard

    decoder = zstandard.ZstdDecompressor().decompressobj()
    in_frame = False
    pending = b""
    while True:
        if not pending:
            pending = read(piece)
            if not pending:
                if in_frame:
                    raise ValueError("the compressed data ends early")
                return
        try:
            out = decoder.decompress(pending)
        except zstandard.ZstdError as exc:
            raise ValueError(str(exc)) from None
        in_frame = True
        pending = b""
        if decoder.eof:  # a frame ended: what follows it is the next frame
            pending = decoder.unused_data
            decoder = zstandard.ZstdDecompressor().decompressobj()
            in_frame = False
        if out:
            yield out


def _zstd_bounded(data: bytes, limit: _Ceiling, field: str, location: Location | None) -> bytes:
    out = bytearray()
    try:
        for piece in zstd_pieces(io.BytesIO(data).read):
            out += piece
            _check_output(len(out), limit, field, location)
    except ValueError as exc:
        raise RecordFieldError(field, f"cannot decompress the zstd body: {exc}") from None
    return bytes(out)


def _brotli_bounded(data: bytes, limit: _Ceiling, field: str, location: Location | None) -> bytes:
    import brotli

    decoder = brotli.Decompressor()
    out = bytearray()
    try:
        # At most one piece of output per call (``output_buffer_limit``), so a small bomb
        # stops within one piece of the bound; the rest of the input waits until the decoder
        # can take more.
        out += decoder.process(data, output_buffer_limit=_PIECE)
        _check_output(len(out), limit, field, location)
        while not decoder.can_accept_more_data():
            out += decoder.process(b"", output_buffer_limit=_PIECE)
            _check_output(len(out), limit, field, location)
        if not decoder.is_finished():
            raise RecordFieldError(field, "cannot decompress the br body: the data ends early")
    except brotli.error as exc:
        raise RecordFieldError(field, f"cannot decompress the br body: {exc}") from None
    return bytes(out)


def _body_ceiling() -> _Ceiling:
    """The output one body may inflate to, and the setting that says so."""
    limits = current()
    if limits.max_document_bytes < limits.max_decompressed_bytes:
        return limits.max_document_bytes, "max_document_bytes"
    return limits.max_decompressed_bytes, "max_decompressed_bytes"


def _check_output(size: int, ceiling: _Ceiling, field: str, location: Location | None) -> None:
    limit, setting = ceiling
    if size > limit:
        error: LimitExceededError = exceeded(
            setting,
            size,
            field=field,
            location=location,
            what="a compressed body inflating past a size of",
        )
        raise error
