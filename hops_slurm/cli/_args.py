"""Argument types for the CLI: numbers that must be finite and inside a range, checked by argparse so a
bad value is one ``error:`` line naming the option (never a silent clamp or a failure further down)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{n} is outside {lo}..{hi}")
        return n

    return parse


def bounded_float(lo: float, hi: float, *, low_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        if not math.isfinite(x) or x > hi or x < lo or (low_open and x == lo):
            raise argparse.ArgumentTypeError(f"{text[:40]} is outside {'(' if low_open else '['}{lo:g}, {hi:g}]")
        return x

    return parse
