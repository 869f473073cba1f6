"""The offer file: what the engine writes for the submit hook, and the hook's reading of it, in Python.

Where it sits: the round's ``offer`` step (:mod:`hops_slurm.engine.cycle`) makes an :class:`Offer`
(:func:`hops_slurm.engine.offer.make_offer`) and hands it to an :class:`OfferWriter`, which writes
``hops-offer`` beside the submit hook (``[engine] offer_file``); ``hooks/hops_offer.lua`` reads it
(``read_offer``) inside slurmctld. :func:`parse` is that reading, byte for byte: the tests assert what
the hook accepts through it (``tests/hops_slurm/engine/test_offer_file.py`` runs the same inputs through
both and compares their verdicts).

The file, version 2 (ASCII, one item per line; at most :data:`MAX_BYTES`)::

    hops-offer 2
    as_of <the read of Slurm it reflects, whole seconds>
    expires <whole seconds; the hook holds jobs as usual after it>
    tres <gres:gpu: on 22.05, gres/gpu: from 23.02: how slurmctld writes a GPU request>
    node <name> <free GPUs> <partition>[,<partition>...]   (zero or more, best first; the Hops partitions
                                                           the node is in that may take offers)

A closed offer is the first line alone. The reading (the hook's, and :func:`parse`): more than
:data:`MAX_BYTES` bytes is no offer; lines are the runs of bytes between newlines (empty ones skipped);
the first must be the header exactly; words are the runs of bytes between spaces (more than four on a
line: no offer); ``as_of`` and ``expires`` take one whole number of at most 12 digits (anything else
unsets them; the last such line counts); ``tres`` one of the two forms exactly (else no offer); ``node``
a name of ``[A-Za-z0-9._-]`` (at most 64), a whole number of at most 4 digits and a comma list of 1 to
:data:`MAX_PARTITIONS` partition names of ``[A-Za-z0-9._-]`` (1 to 64 each, none empty) (else no
offer); node lines past :data:`MAX_NODES` are checked and ignored; any other line: no offer. Without
``as_of``, ``expires`` and ``tres`` there is no offer.
"""

from __future__ import annotations

import logging
import math
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.rootfile import write_file

log = logging.getLogger(__name__)

FILE_NAME = "hops-offer"  # beside the submit hook: it looks for it in its own directory
HEADER = "hops-offer 2"
MAX_BYTES = 65536  # the hook reads no more than this (hooks/hops_offer.lua: MAX_OFFER_BYTES)
MAX_NODES = 4096  # node lines the hook reads (hooks/hops_offer.lua: MAX_OFFER_NODES)
MAX_PARTITIONS = 64  # partitions on one node line (interface: at most 64 Hops partitions)
MAX_PARTITION_FIELD = 4096  # bytes of that list
TRES_PREFIXES = ("gres:gpu:", "gres/gpu:")
#: node and partition names the hook accepts (the same class, the same length)
NODE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_NAME = re.compile(rb"[A-Za-z0-9._-]{1,64}")
_WHOLE = re.compile(rb"[0-9]+")

#: one node of an offer: its name, its free GPUs, the Hops partitions it is offered to
OfferNode = tuple[str, int, tuple[str, ...]]


@dataclass(frozen=True)
class Offer:
    """Idle GPUs per node, best first, as of one read of Slurm."""

    as_of: float
    expires: float
    tres: str
    nodes: tuple[OfferNode, ...]

    def rendered(self) -> tuple[str, int]:
        """The file's text and how many nodes were left out to keep it within :data:`MAX_BYTES` and
        :data:`MAX_NODES` (the last ones: the worst ranked)."""
        lines = [HEADER, f"as_of {math.floor(self.as_of)}", f"expires {math.floor(self.expires)}", f"tres {self.tres}"]
        size = sum(len(line) + 1 for line in lines)
        kept = 0
        for name, free, parts in self.nodes[:MAX_NODES]:
            line = f"node {name} {free} {','.join(parts)}"
            if size + len(line) + 1 > MAX_BYTES:
                break
            lines.append(line)
            size += len(line) + 1
            kept += 1
        return "\n".join(lines) + "\n", len(self.nodes) - kept

    def render(self) -> str:
        return self.rendered()[0]


@dataclass(frozen=True)
class Published:
    """An offer the engine wrote, and when (the grant check: :mod:`hops_slurm.engine.offer_grant`)."""

    at: float
    offer: Offer


#: offers the engine remembers
HISTORY = 256


def closed() -> str:
    return HEADER + "\n"


def _whole(word: bytes, digits: int) -> int | None:
    return int(word) if len(word) <= digits and _WHOLE.fullmatch(word) else None


def _partitions(word: bytes) -> tuple[str, ...] | None:
    if len(word) > MAX_PARTITION_FIELD:
        return None
    names = word.split(b",")
    if len(names) > MAX_PARTITIONS or not all(_NAME.fullmatch(n) for n in names):
        return None
    return tuple(n.decode("ascii") for n in names)


def parse(data: bytes) -> Offer | None:
    """The offer ``data`` holds, or None: the hook's reading (the module docstring), byte for byte."""
    if not data or len(data) > MAX_BYTES:
        return None
    lines = [line for line in data.split(b"\n") if line]
    if not lines or lines[0] != HEADER.encode():
        return None
    fields: dict[bytes, int | None] = {b"as_of": None, b"expires": None}
    tres: str | None = None
    nodes: list[OfferNode] = []
    for line in lines[1:]:
        words = [w for w in line.split(b" ") if w]
        if not words or len(words) > 4:
            return None
        if words[0] == b"node" and len(words) == 4:
            free, parts = _whole(words[2], 4), _partitions(words[3])
            if not _NAME.fullmatch(words[1]) or free is None or parts is None:
                return None
            if len(nodes) < MAX_NODES:
                nodes.append((words[1].decode("ascii"), free, parts))
        elif words[0] in fields and len(words) == 2:
            fields[words[0]] = _whole(words[1], 12)
        elif words[0] == b"tres" and len(words) == 2 and words[1].decode("latin-1") in TRES_PREFIXES:
            tres = words[1].decode("ascii")
        else:
            return None
    as_of, expires = fields[b"as_of"], fields[b"expires"]
    if as_of is None or expires is None or tres is None:
        return None
    return Offer(as_of=float(as_of), expires=float(expires), tres=tres, nodes=tuple(nodes))


def read(path: Path) -> Offer | None:
    """The offer a file holds (None: closed, missing, unreadable or not an offer): :func:`parse`."""
    try:
        with path.open("rb") as f:
            return parse(f.read(MAX_BYTES + 1))
    except OSError:
        return None


def publish(path: Path, offer: Offer | None) -> int:
    """Write the offer (or a closed one) atomically, 0644, never through a link and only into a directory
    that is root's own and writable by no one else (:func:`hops_slurm.rootfile.write_file`). The number
    of nodes left out to keep within the hook's limits."""
    text, dropped = offer.rendered() if offer is not None else (closed(), 0)
    write_file(path.parent, path.name, text.encode("ascii"))
    return dropped


class OfferWriter:
    """The engine's one writer of the offer file: knows whether the offer is open (so that closing one
    already closed writes nothing) and logs once per change when the offer would pass the hook's limits
    and nodes are left out (never silently turning offers off)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.open = True  # unknown at start: the first close writes
        self.dropped = 0
        #: the open offers written (oldest first, at most :data:`HISTORY`), each with when it was written
        self.history: deque[Published] = deque(maxlen=HISTORY)

    def publish(self, offer: Offer | None, now: float = 0.0) -> None:
        dropped = publish(self.path, offer)
        self.open = offer is not None
        if offer is not None:
            self.history.append(Published(now, offer))
        if dropped != self.dropped:
            if dropped:
                log.warning("the offer lists %d nodes; the hook reads %d bytes and %d node lines: the last %d "
                            "(the worst ranked) are left out", len(offer.nodes) if offer else 0, MAX_BYTES,
                            MAX_NODES, dropped)
            else:
                log.info("the offer fits the hook's limits again")
            self.dropped = dropped

    def close(self) -> None:
        """Close the offer (write the header alone) unless it is known closed."""
        if self.open:
            self.publish(None)


__all__ = ["FILE_NAME", "HEADER", "MAX_BYTES", "MAX_NODES", "NODE_NAME", "Offer", "OfferNode", "OfferWriter", "Published",
           "TRES_PREFIXES", "closed", "parse", "publish", "read"]
