"""Parsers for Slurm's compact notations: host lists, GRES strings with GPU indices, one-line records.

Pure functions; the CLI backend feeds them ``squeue/sinfo --json`` fields and ``scontrol -o -d`` output.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

def expand_hostlist(text: str) -> list[str]:
    """``gpu[01-03,7],cpu1`` -> ``['gpu01', 'gpu02', 'gpu03', 'gpu7', 'cpu1']`` (zero padding kept,
    several bracket groups in one name allowed); ``(null)``, ``None assigned`` or empty -> ``[]``.
    Raises ValueError on a malformed range."""
    text = text.strip()
    if not text or text == "(null)" or text.lower().startswith("none"):
        return []
    names: list[str] = []
    for part in _split_top_level(text):
        pieces = re.split(r"\[([^\]]*)\]", part)  # literal, range, literal, range, ..., literal
        choices = [[p] if i % 2 == 0 else _expand_range(p) for i, p in enumerate(pieces)]
        names.extend("".join(combo) for combo in itertools.product(*choices))
    return names


def _expand_range(body: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not sep:
            out.append(lo)
            continue
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise ValueError(f"bad hostlist range {item!r}")
        out.extend(str(i).zfill(len(lo)) for i in range(int(lo), int(hi) + 1))
    return out


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and parentheses: ``g[1-2],h`` and ``gpu:a100:2(IDX:0,3),mps:1``."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


def expand_indices(text: str) -> list[int]:
    """``0-2,5`` -> ``[0, 1, 2, 5]``; ``N/A`` or empty -> ``[]``."""
    if not text or text == "N/A":
        return []
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass(frozen=True)
class GpuGres:
    gpu_type: str  # "" when untyped
    count: int
    indices: tuple[int, ...] = ()


_GRES = re.compile(r"^gpu(?::(?P<type>[A-Za-z0-9_.-]+))?:(?P<count>\d+)(?:\(IDX:(?P<idx>[^)]*)\))?")


def parse_gpu_gres(text: str) -> GpuGres | None:
    """One GRES entry: ``gpu:a100:5(IDX:0-4)``, ``gpu:a100:2(IDX:0,3)``, ``gpu:v100:0(IDX:N/A)``, ``gpu:2``;
    None if not a GPU. Entries are separated by commas outside the parentheses of an index list."""
    for entry in _split_top_level(text or ""):
        entry = entry.strip().removeprefix("gres:").removeprefix("gres/")
        m = _GRES.match(entry)
        if m:
            gpu_type = m["type"] or ""
            if gpu_type.isdigit() and m["count"] is None:
                gpu_type = ""
            return GpuGres(gpu_type, int(m["count"]), tuple(expand_indices(m["idx"] or "")))
    return None


def parse_oneliner(line: str) -> dict[str, str]:
    """``scontrol -o show job`` record -> dict (first occurrence of each key wins)."""
    fields: dict[str, str] = {}
    for token in line.split():
        key, eq, value = token.partition("=")
        if eq:
            fields.setdefault(key, value)
    return fields


def job_gpu_allocation(line: str) -> dict[str, tuple[int, ...]]:
    """Per-node GPU indices of a running job from ``scontrol -o -d show job`` (the ``Nodes=... GRES=`` pairs)."""
    alloc: dict[str, tuple[int, ...]] = {}
    nodes: list[str] = []
    for token in line.split():
        key, _, value = token.partition("=")
        if key == "Nodes":
            nodes = expand_hostlist(value)
        elif key == "GRES" and nodes:
            gres = parse_gpu_gres(value)
            for node in nodes:
                alloc[node] = gres.indices if gres else ()
            nodes = []
    return alloc
