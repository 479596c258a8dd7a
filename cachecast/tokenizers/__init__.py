"""cachecast.tokenizers: exact offline tokenization and prompt-log ingestion.

``read_log`` / ``read_records`` stream logs into :class:`TokenizedRequest` objects;
``get_tokenizer`` maps a model name to its tokenizer (see ``registry``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cachecast.core.lazy import lazy_exports

if TYPE_CHECKING:
    from cachecast.core.errors import UnknownModelError
    from cachecast.tokenizers.base import Tokenizer
    from cachecast.tokenizers.encode import SegmentCache
    from cachecast.tokenizers.openai_data import VocabularyIntegrityError, load_openai_encoding
    from cachecast.tokenizers.records import read_log, read_records
    from cachecast.tokenizers.registry import (
        LocalTokenizerRefused,
        get_tokenizer,
        local_tokenizer_directories,
        refuse_local_tokenizer_directories,
    )
    from cachecast.tokenizers.types import Breakpoint, ObservedUsage, Segment, TokenizedRequest

# Each name is imported on first use (cachecast.core.lazy).
_EXPORTS = {
    "UnknownModelError": "cachecast.core.errors",
    "Tokenizer": "cachecast.tokenizers.base",
    "SegmentCache": "cachecast.tokenizers.encode",
    "VocabularyIntegrityError": "cachecast.tokenizers.openai_data",
    "load_openai_encoding": "cachecast.tokenizers.openai_data",
    "read_log": "cachecast.tokenizers.records",
    "read_records": "cachecast.tokenizers.records",
    "LocalTokenizerRefused": "cachecast.tokenizers.registry",
    "get_tokenizer": "cachecast.tokenizers.registry",
    "local_tokenizer_directories": "cachecast.tokenizers.registry",
    "refuse_local_tokenizer_directories": "cachecast.tokenizers.registry",
    "Breakpoint": "cachecast.tokenizers.types",
    "ObservedUsage": "cachecast.tokenizers.types",
    "Segment": "cachecast.tokenizers.types",
    "TokenizedRequest": "cachecast.tokenizers.types",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "Breakpoint",
    "LocalTokenizerRefused",
    "ObservedUsage",
    "Segment",
    "SegmentCache",
    "TokenizedRequest",
    "Tokenizer",
    "UnknownModelError",
    "VocabularyIntegrityError",
    "get_tokenizer",
    "load_openai_encoding",
    "local_tokenizer_directories",
    "read_log",
    "read_records",
    "refuse_local_tokenizer_directories",
]
