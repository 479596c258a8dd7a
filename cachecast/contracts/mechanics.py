"""Cache mechanics a provider documents that the stored contract terms do not hold yet.

Each entry names the provider, the first day it applies and its source; a policy asks here,
with the contract version in force, instead of naming providers itself.

**Generated replies cached (DeepSeek, from V3.2 on 2025-09-29).** DeepSeek's context
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
previous completion) / 64) in 5 of 6 later requests. So the rule starts with V3.2's version, an
inference from recordings [U]; earlier versions keep the guide's prompt-only reading.

**Reads in 128-token steps (DeepSeek, from the V4 launch on 2026-04-24).** The guide of V3's
time (https://api-docs.deepseek.com/news/news0802) gave 64-token storage units; the guide of
the V4 rules names "cache prefix units", some of them cut "at fixed token intervals", and no
size. Every read recorded under those rules is a multiple of 128, and those that tell 64 from
128 apart are 128's: a measurement report on deepseek-chat (V4-Flash, 2026-08-10; GitHub
jeojdi/Brevitas-Systems, docs/DEEPSEEK_CACHE_MAP.md) resent prompts of 201, 1,015, 1,868 and
2,024 tokens and read 128, 896, 1,792 and 1,920 (64-token units would read 192, 960, 1,856
and 1,984), and a 98-token prompt read nothing; rig's deepseek-flash cassette (2026) reads
128, 256, 256, 384 and 510 over five turns, its turns 2 and 4 reading 256 and 384 of prefixes
of about 352 and 496 tokens shared with the turn before (64-token units: 320 and 448); the
pydantic-ai and RubyLLM cassettes of 2026-06 read 512, 896 and 384 (multiples of both). So a
DeepSeek version from 2026-04-24 on matches and reads in 128-token steps, whatever smaller
step it stores (docs/predictions.md, "DeepSeek's 128-token steps"): an inference from
recordings [U], DeepSeek states no size.
"""

from __future__ import annotations

import datetime as dt

from cachecast.contracts.model import ContractTerms

REPLY_CACHING_FROM: dict[str, dt.date] = {"deepseek": dt.date(2025, 9, 29)}

READ_STEPS: dict[str, tuple[dt.date, int]] = {"deepseek": (dt.date(2026, 4, 24), 128)}
"""provider -> (first day, tokens): the step its automatic cache matches and reads in."""


def caches_replies(terms: ContractTerms) -> bool:
    """Whether the provider caches what it generated, under the version ``terms``."""
    start = REPLY_CACHING_FROM.get(terms.provider)
    return start is not None and terms.effective_from >= start


def read_step(terms: ContractTerms) -> int | None:
    """The step (tokens) the provider's automatic cache reads in under the version ``terms``,
    where the recordings show a coarser one than the stored ``increment_tokens``; None where
    the stored terms stand."""
    found = READ_STEPS.get(terms.provider)
    if found is None or terms.effective_from < found[0]:
        return None
    step = found[1]
    stored = terms.increment_tokens
    if stored is not None and stored >= step:
        return None
    return step
