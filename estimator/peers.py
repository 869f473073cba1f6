"""The cross-model layer: how every job that ran on a GPU type scaled there, carried to a job that ran once.

Where it sits: a view of :class:`estimator.store.ThroughputStore`'s type layer across signatures
(:func:`read`, through :meth:`~estimator.store.ThroughputStore.peers`; no table of its own), read once per
round like the calibrations (:class:`estimator.snapshot.CachedSource`), and asked by
:func:`estimator.estimate.per_gpu_estimate` for a config no record of the job measured, after
:mod:`estimator.family_refine` (siblings of its own network) and before :mod:`estimator.refine` alone.
The paper's store keeps layers above the job (Hops §3.3: entity and type knowledge shared by jobs);
this one is what the type's jobs, all of them, say about going from one GPU count to another.

The rule (layer ``peers``): the job has run on the GPU type in the same scope (one server, or across
servers) at another multi-GPU count N0 and its per-GPU rate there is r(N0); its *efficiency* there is
e = r(N0) / r1, r1 its 1-GPU rate on the type (the probe's batch / (T_f + T_b + T_u), else its 1-GPU
record). Each other signature p that ran there at both N0 and the asked count N says the rate moves by
q_p = r_p(N) / r_p(N0); a peer whose efficiency at N0 is near the job's has the same share of an
iteration in communication and overhead at N0, so its share at N is the best guess for the job's:
weight w_p = exp(-|ln(e_p / e)| / :data:`WIDTH`). The job's own carry
(:func:`estimator.refine.carried_per_gpu`) is one more answer, weight :data:`OWN_WEIGHT` (as a peer at
its own efficiency). The estimate is the weighted geometric mean r(N0) · q. N0 is the job's count
nearest N (ratio distance, ties the larger) among those some peer also ran at N. None where no peer
carries. Bounded: at most :data:`MAX_PEERS` signatures per (GPU type, scope), those measured at the most
counts. Off by default (:attr:`estimator.estimate.Estimator.cross_model`): on the learning-curve bench it
moves the mean after one run on the type 12.7% -> 12.6% (docs/results/estimator-learning.md), too little to
change the paper tables' results unmeasured. Pure: plain values in and out (:func:`read` takes the store's
database).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlite_utils

from estimator.extrapolate import measured_points
from estimator.refine import carried_per_gpu
from estimator.snapshot import JobSnapshot

#: the layer of an estimate carried with the scaling of the type's other jobs
PEERS = "peers"
#: efficiency distance (natural log) at which a peer's weight falls to 1/e
WIDTH = 0.1
#: the weight of the job's own carry (that of a peer at the job's very efficiency)
OWN_WEIGHT = 1.0
#: signatures per (GPU type, scope) the table keeps (those measured at the most counts first)
MAX_PEERS = 256


@dataclass(frozen=True)
class Peer:
    """One signature's type-layer rates on a GPU type in one scope: per-GPU samples/s by count (GPUs in
    one server, nodes across servers) and its 1-GPU rate there."""

    signature: str
    one_gpu: float
    rates: Mapping[int, float]


@dataclass(frozen=True)
class PeerTable:
    """Per (GPU type, one server?), the peers measured at two multi-GPU counts or more."""

    peers: Mapping[tuple[str, bool], tuple[Peer, ...]] = field(default_factory=dict)

    def answers(self, gpu_type: str, aggregated: bool, count0: int, count: int,
                exclude: str) -> list[tuple[float, float]]:
        """(efficiency at ``count0``, rate(count) / rate(count0)) of every peer but ``exclude`` that ran both."""
        return [(p.rates[count0] / p.one_gpu, p.rates[count] / p.rates[count0])
                for p in self.peers.get((gpu_type, aggregated), ())
                if p.signature != exclude and count0 in p.rates and count in p.rates]


EMPTY = PeerTable()


def read(db: sqlite_utils.Database) -> PeerTable:
    """The type layer of every signature as a :class:`PeerTable` (bounded, module docstring)."""
    one: dict[tuple[str, str], float] = {}
    for sig, gpu_type, batch, step in db.execute("SELECT signature, gpu_type, batch_size, t_f + t_b + t_u FROM theory"):
        if step and step > 0:
            one[(str(sig), str(gpu_type))] = float(batch) / float(step)
    rates: dict[tuple[str, bool], dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for table, count, aggregated in (("type_aggregated", "gpus", True), ("type_distributed", "nodes", False)):
        for sig, gpu_type, c, v in db.execute(f"SELECT signature, gpu_type, {count}, sum(total) / sum(n) "
                                               f"FROM {table} GROUP BY 1, 2, 3"):
            if v is not None and math.isfinite(v) and v > 0:
                rates[(str(gpu_type), aggregated)][str(sig)][int(c)] = float(v)
    out: dict[tuple[str, bool], tuple[Peer, ...]] = {}
    for (gpu_type, aggregated), by_sig in rates.items():
        peers = []
        for sig, got in by_sig.items():
            base = one.get((sig, gpu_type)) or rates.get((gpu_type, True), {}).get(sig, {}).get(1)
            multi = {c: v for c, v in got.items() if c >= 2}
            if base and len(multi) >= 2:
                peers.append(Peer(sig, base, multi))
        peers.sort(key=lambda p: (-len(p.rates), p.signature))
        if peers:
            out[(gpu_type, aggregated)] = tuple(peers[:MAX_PEERS])
    return PeerTable(out)


def one_gpu_rate(snap: JobSnapshot, gpu_type: str) -> float | None:
    """The job's 1-GPU per-GPU rate on ``gpu_type`` as :func:`read` reads a peer's (the probe, else a record)."""
    theory = snap.theory.get(gpu_type)
    if theory is not None:
        tc = theory.components
        step = tc.t_f + tc.t_b + tc.t_u
        if step > 0:
            return tc.batch_size / step
    measured = snap.type_aggregated.get((gpu_type, 1))
    return measured if measured is not None and math.isfinite(measured) and measured > 0 else None


def peer_per_gpu(snap: JobSnapshot, table: PeerTable, gpu_type: str, *, gpus: int, nodes: int) -> float | None:
    """Per-GPU samples/s of the job on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs: its own rate at
    another count carried with the scaling of the type's jobs of like efficiency (module docstring); None
    where no peer carries."""
    theory = snap.theory.get(gpu_type)
    if theory is None or not table.peers or gpus < 2 or not 1 <= nodes <= gpus:
        return None
    one = one_gpu_rate(snap, gpu_type)
    if one is None:
        return None
    aggregated = nodes == 1
    count = gpus if aggregated else nodes
    own = sorted((p for p in measured_points(snap, gpu_type) if p[0] == aggregated and p[1] >= 2 and p[1] != count),
                 key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    for _, count0, per_gpu0 in own:
        seen = table.answers(gpu_type, aggregated, count0, count, snap.signature)
        if not seen:
            continue
        eff = per_gpu0 / one
        answers = [(math.exp(-abs(math.log(e / eff)) / WIDTH), per_gpu0 * q) for e, q in seen]
        carried = carried_per_gpu(theory.components, theory.data, per_gpu0, count0, gpus=gpus, nodes=nodes)
        if carried is not None and math.isfinite(carried) and carried > 0:
            answers.append((OWN_WEIGHT, carried))
        total = sum(w for w, _ in answers)
        if total <= 0:
            return None
        return math.exp(sum(w * math.log(v) for w, v in answers) / total)
    return None


__all__ = ["EMPTY", "MAX_PEERS", "OWN_WEIGHT", "PEERS", "WIDTH", "Peer", "PeerTable", "one_gpu_rate",
           "peer_per_gpu", "read"]
