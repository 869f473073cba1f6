"""Signatures and packing: what the compact ILP sees of a configuration, and how it is put on nodes.

Shared by the placement ILP (:mod:`planner.ilp`), the post-solve mapping that keeps running jobs on
their nodes (:mod:`planner.keep`) and the greedy fallbacks (:mod:`planner.greedy`). Pure: no solver
calls here except :func:`quiet_stdout`, the guard every CBC call in the planner runs under.

A config's *signature* is the multiset of its pieces (GPUs on one node): a single-node config's piece
is keyed by its GPU type and server class (any node of the class with room will do); a multi-node
config's pieces by (type, class, free GPUs of the node). Nodes with one signature key are
interchangeable for the planner; :mod:`planner.entities` makes sure nodes whose estimated speed
differs never share a class.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from planner.views import Config, NodeView, freeze_config

BinKey = tuple[str, str, int]  # (gpu_type, server_class, free_gpus)
Piece = tuple[BinKey, int]  # GPUs of one config on one node of a bin
Signature = tuple[Piece, ...]
GroupKey = tuple[str, str, int, str]  # (gpu_type, server_class, free_gpus, pinned node name or "")
ModelPiece = tuple[GroupKey, int]  # a piece as the model places it: (where it may go, GPUs)


@dataclass(frozen=True)
class Candidate:
    """One candidate config of one job with its throughput gain G (eq. 11)."""

    job_id: str
    config: Config
    gain: float
    #: the config's signature and the nodes (the very tuple) it was read on, when whoever made the candidate
    #: worked it out (:func:`planner.hops.candidates_for`): :func:`signature_on` reuses it on those nodes
    sig: Signature | None = field(default=None, compare=False, repr=False)
    on: Sequence[NodeView] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def made(cls, job_id: str, config: Config, gain: float, sig: Signature | None = None,
             on: Sequence[NodeView] | None = None) -> Candidate:
        """``Candidate(job_id, config, gain, sig, on)`` without the frozen class's five guarded attribute
        writes: the same fields in one dict (hundreds of thousands are made per planning at 16,384 GPUs)."""
        made = _new(cls)
        fields = made.__dict__
        fields["job_id"] = job_id
        fields["config"] = config
        fields["gain"] = gain
        fields["sig"] = sig
        fields["on"] = on
        return made


_new = object.__new__


def signature_on(c: Candidate, nodes: Sequence[NodeView] | None, by_name: Mapping[str, NodeView]) -> Signature:
    """``c.config``'s signature on ``nodes`` (``by_name``: the same nodes by name): the one the candidate
    carries when it was read on these very nodes, else worked out."""
    if c.sig is not None and c.on is nodes and nodes is not None:
        return c.sig
    return signature(c.config, by_name)



def objective_of(assignments: Mapping[str, Config | None], cands: Sequence[Candidate],
                 weights: Mapping[str, float], nodes: Sequence[NodeView] | None = None) -> float:
    """Eq. 11 value of an assignment. Each chosen config must be a candidate or, with ``nodes``, have
    a candidate's signature (the compact model's interchangeable placements)."""
    if nodes is not None:
        by_name = {n.name: n for n in nodes}
        key = lambda j, cfg: (j, signature(cfg, by_name))  # noqa: E731
        key_of = lambda c: (c.job_id, signature_on(c, nodes, by_name))  # noqa: E731
    else:
        key = lambda j, cfg: (j, tuple(cfg.items()))  # noqa: E731
        key_of = lambda c: key(c.job_id, c.config)  # noqa: E731
    gain: dict[object, float] = {}
    chosen = {j for j, cfg in assignments.items() if cfg}
    # only the chosen jobs' candidates count (picked out in C: often a few jobs of hundreds of thousands)
    for c in compress(cands, map(chosen.__contains__, map(attrgetter("job_id"), cands))):
        k = key_of(c)
        gain[k] = max(gain.get(k, 0.0), c.gain)
    return sum(weights[j] * gain[key(j, cfg)] for j, cfg in assignments.items() if cfg)



@contextlib.contextmanager
def quiet_stdout(active: bool) -> Iterator[None]:
    """CBC's LP re-solve (Clp) logs to the C stdout whatever the log level; silence that fd."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------- compact formulation
#
# A piece is (key, GPUs on one node). Single-node configs use key (type, class, 0): any node of the
# class with room will do. Pieces of multi-node configs use key (type, class, free GPUs of the node):
# their full pieces fill a node of exactly that kind, so two pieces of one config never share a node.
# Nodes form groups (type, class, free); patterns are per group. Capacity per (group, size) for the
# multi-node pieces, and per (class, size) for all pieces of the class (a transportation argument:
# single-node pieces take whatever slots of their class the multi-node pieces leave).


def piece_key(node: NodeView, spans: bool) -> BinKey:
    return (node.gpu_type, node.server_class, node.free_gpus if spans else 0)


def signature(config: Config, nodes: Mapping[str, NodeView]) -> Signature:
    """The multiset of a config's pieces: what the compact model sees of it."""
    if len(config) == 1:
        (name, g), = config.items()
        node = nodes[name]
        return (((node.gpu_type, node.server_class, 0), g),)
    pieces = []
    for n, g in config.items():
        node = nodes[n]
        pieces.append(((node.gpu_type, node.server_class, node.free_gpus), g))
    pieces.sort()
    return tuple(pieces)


def shares_a_node(sig: Signature) -> bool:
    """Whether two pieces of one multi-node signature could share a node of their kind (their GPUs
    add up to at most the node's free GPUs).

    Configs built on this round's free GPUs never do (every piece but the last fills its node), but a
    running job's current config can: planned in a fragment plan on a node's idle GPUs, it reads as two
    partial pieces on nodes that the round plan now counts as wholly free. Pattern counts alone would
    let both pieces onto one node (no real placement then exists), so the model pins such a
    signature to its own config's nodes (see :func:`solve_compact`)."""
    if len(sig) < 2:
        return False
    # in (key, GPUs) order a key's two smallest pieces are its first two: they share a node when any two
    # neighbours of one key do
    ordered = sorted(sig)
    return any(a[0] == b[0] and a[0][2] and a[1] + b[1] <= a[0][2] for a, b in zip(ordered, ordered[1:]))


def maximal_patterns(capacity: int, sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """Maximal multisets (descending tuples) of ``sizes`` with sum ≤ ``capacity``."""
    sizes = sorted(set(s for s in sizes if 0 < s <= capacity), reverse=True)
    if not sizes:
        return []
    smallest = sizes[-1]
    out: list[tuple[int, ...]] = []

    def rec(i: int, left: int, chosen: list[int]) -> None:
        if i == len(sizes):
            if left < smallest:  # the smallest size no longer fits: maximal
                out.append(tuple(chosen))
            return
        s = sizes[i]
        for k in range(left // s, -1, -1):
            rec(i + 1, left - k * s, chosen + [s] * k)

    rec(0, capacity, [])
    return out


def _extend_to_maximal(pieces: Sequence[int], capacity: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """The maximal pattern (as enumerated by :func:`maximal_patterns`) containing ``pieces``."""
    usable = sorted(set(s for s in sizes if 0 < s <= capacity))
    chosen = list(pieces)
    left = capacity - sum(chosen)
    if usable:
        while left >= usable[0]:
            chosen.append(usable[0])
            left -= usable[0]
    return tuple(sorted(chosen, reverse=True))


class Packer:
    """Concrete GPUs left per node; places a signature's pieces on real nodes (best fit)."""

    def __init__(self, nodes: Sequence[NodeView], left: Mapping[str, int] | None = None) -> None:
        self.left = {n.name: n.free_gpus for n in nodes} if left is None else dict(left)
        self.by_key: dict[BinKey, list[str]] = defaultdict(list)
        self._keys_of: dict[str, tuple[BinKey, BinKey]] = {}
        for n in nodes:
            if n.free_gpus > 0:
                self.by_key[piece_key(n, True)].append(n.name)
                self.by_key[piece_key(n, False)].append(n.name)
                self._keys_of[n.name] = (piece_key(n, True), piece_key(n, False))
        # the most GPUs left on one node of each key, worked out again when a node of the key changed: a
        # signature one of whose pieces exceeds it cannot be placed (most tries of a rounding fail so)
        self._most: dict[BinKey, int] = {}

    def _most_left(self, key: BinKey) -> int:
        most = self._most.get(key)
        if most is None:
            most = self._most[key] = max((self.left[n] for n in self.by_key.get(key, ())), default=0)
        return most

    def _change(self, node: str, delta: int) -> None:
        self.left[node] += delta
        for key in self._keys_of.get(node, ()):
            self._most.pop(key, None)

    def cannot(self, sig: Signature) -> bool:
        """Whether some piece of ``sig`` exceeds what every node of its key has left: then no config of that
        signature fits (:meth:`place` returns None whatever config it is offered of it)."""
        most = self._most
        for key, g in sig:
            m = most.get(key)
            if (m if m is not None else self._most_left(key)) < g:
                return True
        return False

    def place(self, sig: Signature, prefer: Config | None = None, *, only: bool = False) -> Config | None:
        """``sig`` on nodes with room: ``prefer`` when it fits, else (unless ``only``) best fit."""
        if prefer is not None and all(self.left.get(n, -1) >= g for n, g in prefer.items()):
            for n, g in prefer.items():
                self._change(n, -g)
            return prefer
        if only or any(self._most_left(key) < g for key, g in sig):
            return None
        placed: dict[str, int] = {}
        for key, g in sorted(sig, key=lambda p: -p[1]):
            fits = [n for n in self.by_key.get(key, ()) if self.left[n] >= g and n not in placed]
            if key[2] and g == key[2]:
                fits = [n for n in fits if self.left[n] == key[2]]  # a full piece needs an untouched node
            if not fits:
                for n, used in placed.items():
                    self._change(n, used)
                return None
            n = min(fits, key=lambda name: self.left[name])
            placed[n] = g
            self._change(n, -g)
        return freeze_config(placed)


def stays(job_id: str, sig: Signature, current: Mapping[str, Config], by_name: Mapping[str, NodeView]) -> bool:
    """Whether ``job_id`` runs now in a config with signature ``sig`` (it can keep its nodes)."""
    cur = current.get(job_id)
    return bool(cur) and all(n in by_name for n in cur) and signature(cur, by_name) == sig  # type: ignore[arg-type]


def moved(assignments: Mapping[str, Config | None], current: Mapping[str, Config]) -> int:
    """How many running jobs an assignment moves or stops (each one a preemption)."""
    return sum(1 for j, cur in current.items() if cur and dict(assignments.get(j) or {}) != dict(cur))

