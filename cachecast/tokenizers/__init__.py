"""cachecast.tokenizers: exact offline tokenization and prompt-log ingestion.

``read_log`` / ``read_records`` stream logs into :class:`TokenizedRequest` objects;
``get_tokenizer`` maps a model name to its tokenizer (see ``registry``).
"""

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
