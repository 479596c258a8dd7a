"""JSON5 (https://spec.json5.org, 1.0.0), read into the values ``orjson`` gives for JSON:
what talkback writes its tapes in (``JSON5.stringify``: unquoted keys, strings in single
quotes where that needs fewer escapes). Comments, trailing commas, hexadecimal numbers,
``Infinity`` / ``NaN``, leading or trailing decimal points, ``+`` signs, line continuations
and every escape of the specification are read. Nesting is bounded by
:data:`~cachecast.logs.sanitize.MAX_RECORD_DEPTH` (refused as it is met, before Python's own
recursion limit); the caller bounds the text's size before it is read.
"""

from __future__ import annotations

import math
import re
from typing import Any, NoReturn

from cachecast.logs.sanitize import MAX_RECORD_DEPTH


class Json5Error(ValueError):
    """The text is not JSON5; ``line`` is the 1-based line of the fault."""

    def __init__(self, reason: str, line: int) -> None:
        super().__init__(f"line {line}: {reason}")
        self.reason = reason
        self.line = line


# Whitespace of JSON5 (spec section 6): JSON's, vertical tab, form feed, no-break space,
# the line and paragraph separators, the BOM and Unicode's space separators; and comments.
_SKIP = re.compile(
    r"(?:[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+"
    r"|//[^\n\r\u2028\u2029]*|/\*.*?\*/)*",
    re.DOTALL,
)
_IDENTIFIER = re.compile(r"[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*")
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F]+|Infinity|NaN"
    r"|(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_PLAIN = {"'": re.compile(r"[^'\\\n\r]*"), '"': re.compile(r'[^"\\\n\r]*')}
_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "'": "'",
    '"': '"',
    "\\": "\\",
}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


def loads(text: str) -> Any:
    """The value ``text`` holds; :class:`Json5Error` naming the line where it is not JSON5."""
    parser = _Parser(text)
    value = parser.value(1)
    parser.skip()
    if parser.at < len(text):
        parser.fail("text after the value")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, reason: str) -> NoReturn:
        raise Json5Error(reason, self.text.count("\n", 0, self.at) + 1)

    def skip(self) -> None:
        end = _SKIP.match(self.text, self.at)
        self.at = end.end() if end else self.at
        if self.text.startswith("/*", self.at):
            self.fail("a comment that is not closed")

    def value(self, depth: int) -> Any:
        if depth > MAX_RECORD_DEPTH:
            self.fail(f"nested more than {MAX_RECORD_DEPTH} levels deep")
        self.skip()
        char = self.text[self.at : self.at + 1]
        if char == "{":
            return self.container(depth, "}")
        if char == "[":
            return self.container(depth, "]")
        if char in ("'", '"'):
            return self.string(char)
        found = _IDENTIFIER.match(self.text, self.at)
        if found and found.group() in _LITERALS:
            self.at = found.end()
            return _LITERALS[found.group()]
        return self.number()

    def container(self, depth: int, close: str) -> Any:
        self.at += 1
        items: list[Any] = []
        members: dict[str, Any] = {}
        while True:
            self.skip()
            if self.text.startswith(close, self.at):
                self.at += 1
                return members if close == "}" else items
            if close == "}":
                key = self.key()
                self.skip()
                if not self.text.startswith(":", self.at):
                    self.fail(f"expected ':' after the key {key!r}")
                self.at += 1
                members[key] = self.value(depth + 1)
            else:
                items.append(self.value(depth + 1))
            self.skip()
            if self.text.startswith(",", self.at):
                self.at += 1
            elif not self.text.startswith(close, self.at):
                self.fail(f"expected ',' or {close!r}")

    def key(self) -> str:
        char = self.text[self.at : self.at + 1]
        if char in ("'", '"'):
            return self.string(char)
        found = _IDENTIFIER.match(self.text, self.at)
        if not found:
            self.fail("expected a key")
        self.at = found.end()
        return found.group()

    def string(self, quote: str) -> str:
        self.at += 1
        parts: list[str] = []
        plain = _PLAIN[quote]
        text = self.text
        while True:
            run = plain.match(text, self.at)
            assert run is not None  # the pattern matches the empty string
            parts.append(run.group())
            self.at = run.end()
            char = text[self.at : self.at + 1]
            if char == quote:
                self.at += 1
                return "".join(parts)
            if char != "\\":
                self.fail("a string that is not closed on its line")
            parts.append(self.escape())

    def escape(self) -> str:
        char = self.text[self.at + 1 : self.at + 2]
        self.at += 2
        if char in _ESCAPES:
            return _ESCAPES[char]
        if char in ("x", "u"):
            size = 2 if char == "x" else 4
            digits = self.text[self.at : self.at + size]
            if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                self.fail(f"\\{char} needs {size} hexadecimal digits")
            self.at += size
            return chr(int(digits, 16))
        if char == "0" and not self.text[self.at : self.at + 1].isdigit():
            return "\0"
        if char == "\r" and self.text.startswith("\n", self.at):
            self.at += 1
            return ""
        if char in ("\n", "\r", "\u2028", "\u2029"):
            return ""  # a line continuation
        if not char or char.isdigit():
            self.fail("an escape that JSON5 does not allow")
        return char

    def number(self) -> Any:
        found = _NUMBER.match(self.text, self.at)
        if not found:
            self.fail("expected a value")
        self.at = found.end()
        spelled = found.group()
        sign = -1 if spelled.startswith("-") else 1
        body = spelled.lstrip("+-")
        if body == "Infinity":
            return sign * math.inf
        if body == "NaN":
            return math.nan
        try:
            if body[:2] in ("0x", "0X"):
                return sign * int(body, 16)
            if any(c in body for c in ".eE"):
                return sign * float(body)
            return sign * int(body)
        except ValueError:  # more digits than Python converts
            self.fail(f"a number of {len(body):,} digits")
