"""Generate ``examples/block-trace.jsonl``: a small block-level trace in the Mooncake format.

Each line is ``{"timestamp": ms, "input_length": N, "output_length": M, "hash_ids": [...]}``
with one id per 512-token block (the last block may be partial); equal ids mean an equal
prefix chain, as in the public Mooncake trace. The traffic is ours and synthetic, made to show
block-level simulation without shipping anyone else's data:

- 3 long shared system prompts (6 to 10 blocks), each opening many conversations;
- 40 conversations of 2 to 6 turns; every turn resends the conversation so far and appends
  1 to 3 new blocks, so its prefix is the previous turn's whole prompt;
- Poisson arrivals, mean 1.5 s apart, over about 5 minutes.

Deterministic: ``python examples/make_block_trace.py`` rewrites the same bytes every time.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20261202
BLOCK = 512
DEFAULT_OUTPUT = Path(__file__).with_name("block-trace.jsonl")


def generate(seed: int = SEED) -> list[dict[str, object]]:
    rng = random.Random(seed)
    next_id = 0

    def new_blocks(count: int) -> list[int]:
        nonlocal next_id
        ids = list(range(next_id, next_id + count))
        next_id += count
        return ids

    systems = [new_blocks(rng.randint(6, 10)) for _ in range(3)]
    turns: list[tuple[int, list[int], int]] = []  # (conversation, hash ids, tail tokens)
    conversations = []
    for _ in range(40):
        prefix = list(rng.choice(systems))
        history: list[list[int]] = []
        for _turn in range(rng.randint(2, 6)):
            prefix = prefix + new_blocks(rng.randint(1, 3))
            history.append(list(prefix))
        conversations.append(history)
    # Interleave the conversations: each next request comes from a random open one.
    open_ones = [list(history) for history in conversations]
    while open_ones:
        pick = rng.randrange(len(open_ones))
        ids = open_ones[pick].pop(0)
        turns.append((pick, ids, rng.randint(1, BLOCK)))
        if not open_ones[pick]:
            open_ones.pop(pick)
    records: list[dict[str, object]] = []
    clock = 0.0
    for _conversation, ids, tail in turns:
        clock += rng.expovariate(1 / 1.5)
        records.append(
            {
                "timestamp": int(clock * 1000),
                "input_length": (len(ids) - 1) * BLOCK + tail,
                "output_length": rng.randint(20, 400),
                "hash_ids": ids,
            }
        )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    with args.output.open("w", encoding="utf-8") as handle:
        for record in generate():
            handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
