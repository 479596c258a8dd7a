"""Cache mechanics a provider documents that the stored contract terms do not hold yet.

Each entry names the provider, the first day it applies and its source; a policy asks here,
with the contract version in force, instead of naming providers itself.

**Generated replies cached (DeepSeek, from the version of 2025-02-26).** DeepSeek's context
caching guide (https://api-docs.deepseek.com/guides/kv_cache, "Cache Persistence and Hit
Rules", read 2026-12-04): each request leaves two cache prefix units, at the end of the user
input and at the end of the model output. A next request that carries the reply back as it
was generated reads the prompt and the reply. The recordings agree: pydantic-ai's
deepseek-reasoner cassette (2026-06-10) reads 896 tokens after a 875-token prompt whose reply
(79 tokens) it carries verbatim, 896 = 64 x floor((875 + 79) / 64); RubyLLM's deepseek-chat
cassette (2026-06-08) re-serializes the reply's tool-call arguments (no spaces, where the
model wrote them with spaces) and reads 384 = 64 x floor(407 / 64), its previous prompt only
(docs/predictions.md, "Replies DeepSeek caches"). The guide says so from V4 (2026-04-24); the
guide of V3's time shows only a prompt prefix read in its multi-round example, with a reply too
short to tell. Recordings of V3.2 (deepseek-chat's version from 2025-09-29) read the reply too:
RubyLLM's streamed multi-turn cassettes of 2026-04-02 read 64 x floor((previous prompt +
previous completion) / 64) in 5 of 6 later requests. So do recordings of V3 under the version of
2025-02-26: KaibanJS's moscaFetch recording of deepseek-chat on 2025-05-21 carries each reply back
verbatim three times and reads 1,472 = 64 x floor((1,424 + 85) / 64), 2,304 = 64 x floor((2,214
+ 105) / 64) and 2,368 = 64 x floor((2,337 + 89) / 64), each more than the previous prompt.
So the rule starts with the version of 2025-02-26, the first the recordings show it under, an
inference from recordings [U] (V3.1's versions between are taken to keep it: no recording of
them reads a prompt alone); earlier versions keep the guide's prompt-only reading.
"""

from __future__ import annotations

import datetime as dt

from cachecast.contracts.model import ContractTerms

REPLY_CACHING_FROM: dict[str, dt.date] = {"deepseek": dt.date(2025, 2, 26)}


def caches_replies(terms: ContractTerms) -> bool:
    """Whether the provider caches what it generated, under the version ``terms``."""
    start = REPLY_CACHING_FROM.get(terms.provider)
    return start is not None and terms.effective_from >= start
