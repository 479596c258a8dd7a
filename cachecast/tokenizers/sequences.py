"""Comparing id sequences: shared by the tokenizers (calibration) and the simulator."""

from __future__ import annotations

from collections.abc import Sequence


def common_prefix_length(left: Sequence[int], right: Sequence[int]) -> int:
    """How many leading items ``left`` and ``right`` share.

    A binary search on slice equality: each probe is one C-level comparison of the part
    not yet known to match, about log2(n) of them, instead of a Python-level step per item.
    """
    low, high = 0, min(len(left), len(right))  # left[:low] == right[:low]; not at high+1
    if left[:high] == right[:high]:
        return high
    high -= 1
    while low < high:
        middle = (low + high + 1) // 2
        if left[low:middle] == right[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low
