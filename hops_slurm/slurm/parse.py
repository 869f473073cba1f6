"""Parsers for Slurm's compact notations: host lists, GRES strings with GPU indices, one-line records.

Pure functions; the CLI backend feeds them ``squeue/sinfo --json`` fields and ``scontrol -o -d`` output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE_GROUP = re.compile(r"^(?P<prefix>[^\[\],]*)\[(?P<ranges>[^\]]+)\](?P<suffix>[^\[\],]*)$")


def expand_hostlist(text: str) -> list[str]:
    """``a100-[1-2,4],v100-1`` -> ``['a100-1', 'a100-2', 'a100-4', 'v100-1']`` (zero padding kept)."""
    if not text or text in ("(null)", "None"):
        return []
    out: list[str] = []
    for item in _split_top_level(text):
        m = _RANGE_GROUP.match(item)
        if not m:
            out.append(item)
            continue
        for part in m["ranges"].split(","):
            lo, _, hi = part.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                out.append(f"{m['prefix']}{i:0{width}d}{m['suffix']}")
    return out


def _split_top_level(text: str) -> list[str]:
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        items.append(cur)
    return items


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
    """One GRES entry: ``gpu:a100:5(IDX:0-4)``, ``gpu:v100:0(IDX:N/A)``, ``gpu:2``; None if not a GPU."""
    for entry in (text or "").split(","):
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
