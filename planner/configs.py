"""Configuration generation (Hops §3.6): the candidate placements of each window job.

Third step of a planning, after the window (:mod:`planner.window`) and before the ILP
(:mod:`planner.ilp`). A configuration names exact nodes and GPU counts (``{node: gpus}``).

Per GPU type, with S_t the free GPUs of node t and R = (R_1 < ... < R_n) the job's requirements:

* aggregated: ``{t: R_k}`` for every node t of the type with R_k ≤ S_t (the paper's "R_k < S_t" read
  as ≤: docs/design.md, "Reading the paper: the smaller choices");
* distributed, for low-sensitivity jobs (ρ ≤ σ), and for high-sensitivity jobs only when R_1 exceeds
  the largest node of the type (they cannot run otherwise): from each start node, the consecutive
  nodes of the type (cluster order, nodes with free GPUs), each filled with all its free GPUs, the
  last one partly, until R_k is reached; a start whose first node alone holds R_k is the aggregated
  config already. Two pointers keep this O(N_type) per requirement; once the nodes from a start can
  no longer hold R_k, later starts are not tried (the paper's stopping rule).

A job that may use only some nodes (``JobView.nodes``) gets configs on those only (:mod:`planner.eligible`).

A running job's current config is a candidate too whenever it still fits the free GPUs and its size
is one of the requirements, so the ILP can always keep a job where it is.

Spans per speed bucket (``spans="bucketed"``, what the compact ILP uses by default): once every node is
its own entity class (:mod:`planner.entities`: nodes bucketed by estimated speed), the spans from every
start in cluster order are mostly distinct signatures and dominate the model (82% of the candidates at
4096 GPUs). :func:`bucketed_spans` builds spans per (GPU type, slowest speed bucket) instead: for each
entity class c of the type, the nodes of the classes at least as fast for this job as c (a span is
paced by its slowest node), slowest first (c itself first: the faster nodes are left for jobs that
need them), most free GPUs first within a class (fewest nodes); once over all such nodes, and twice
over the nodes that cannot hold the requirement alone (the fragments the paper's rule would fill),
largest and smallest first. At most 3 x classes spans per (job, type, requirement), independent of the
number of nodes. A GPU type whose nodes with free GPUs are at most 3 x its classes, or at most
:data:`EVERY_START_NODES`, keeps the paper's rule (few spans there: the same candidates as before, so
the paper's simulated clusters plan as they did). ``spans="every"`` is the paper's
rule everywhere (the plain model's; the reference the solver bench measures the objective gap
against). docs/design.md, "Spans per speed bucket and column generation".
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from planner.eligible import confine
from planner.views import ClusterView, Config, JobView, NodeView, config_gpus, freeze_config


def aggregated_configs(nodes: Sequence[NodeView], requirement: int, *, one_per_class: bool = False) -> list[Config]:
    """``{t: R}`` on every node with room; with ``one_per_class`` only the first such node of each
    server class (for the compact ILP, where nodes of a class are interchangeable)."""
    out: list[Config] = []
    seen: set[str] = set()
    for n in nodes:
        if requirement <= n.free_gpus and not (one_per_class and n.server_class in seen):
            seen.add(n.server_class)
            out.append(freeze_config({n.name: requirement}))
    return out


def aggregated_of(cluster: ClusterView, gpu_type: str, requirement: int, one_per_class: bool) -> list[Config]:
    """:func:`aggregated_configs` on ``cluster``'s nodes of ``gpu_type``: the same for every job of the view,
    made once per (type, requirement, ``one_per_class``) and view."""
    return cluster._derived(f"aggregated:{gpu_type}:{requirement}:{one_per_class}",  # type: ignore[no-any-return]
                            lambda: aggregated_configs(cluster.nodes_of_type(gpu_type), requirement,
                                                       one_per_class=one_per_class))


def aggregated_items(cluster: ClusterView, gpu_type: str, requirement: int,
                     one_per_class: bool) -> list[tuple[tuple[tuple[str, int], ...], Config]]:
    """:func:`aggregated_of` with each config's items (the key :func:`generate_configs` dedupes on), made
    once per view like the configs themselves."""
    return cluster._derived(f"aggregated-items:{gpu_type}:{requirement}:{one_per_class}",  # type: ignore[no-any-return]
                            lambda: [(tuple(cfg.items()), cfg)
                                     for cfg in aggregated_of(cluster, gpu_type, requirement, one_per_class)])


#: how spanning configs are generated: per speed bucket (compact default) or from every start (the paper's)
SPAN_RULES = ("bucketed", "every")
#: spans per (job, type, requirement, slowest bucket) at most under ``spans="bucketed"``
SPANS_PER_BUCKET = 3
#: a GPU type with at most this many nodes with free GPUs keeps the paper's spans under ``spans="bucketed"``
#: too (at most this many spans per requirement: the model stays small, and the plans as before)
EVERY_START_NODES = 64


def distributed_configs(nodes: Sequence[NodeView], requirement: int) -> list[Config]:
    """Spanning configs from every start over ``nodes`` (one type, cluster order), O(len(nodes))."""
    return list(iter_distributed(nodes, requirement))


def iter_distributed(nodes: Sequence[NodeView], requirement: int) -> Iterator[Config]:
    """:func:`distributed_configs`, one at a time (a caller looking for one good config stops early)."""
    usable = [n for n in nodes if n.free_gpus > 0]
    end = 0  # nodes usable[start:end] are in the current span
    acc = 0  # their free GPUs
    for start in range(len(usable)):
        if end < start:
            end, acc = start, 0
        while end < len(usable) and acc < requirement:
            acc += usable[end].free_gpus
            end += 1
        if acc < requirement:
            break  # fewer nodes left than this requirement needs: no longer spans from later starts
        if usable[start].free_gpus < requirement:
            span = usable[start:end]
            placed = {n.name: n.free_gpus for n in span[:-1]}
            placed[span[-1].name] = requirement - sum(placed.values())
            yield freeze_config(placed)
        acc -= usable[start].free_gpus


class SpanIndex:
    """The nodes with free GPUs of each (GPU type, server class), most free first then cluster order:
    built once per planning for :func:`bucketed_spans`."""

    def __init__(self, cluster: ClusterView) -> None:
        self.classes: dict[str, dict[str, list[NodeView]]] = {}
        for k, n in sorted(enumerate(cluster.nodes), key=lambda kn: (-kn[1].free_gpus, kn[0])):
            if n.free_gpus > 0:
                self.classes.setdefault(n.gpu_type, {}).setdefault(n.server_class, []).append(n)
        self.free = {t: {c: sum(n.free_gpus for n in ns) for c, ns in of.items()} for t, of in self.classes.items()}
        #: each class's nodes as free GPUs, negated (ascending, as the nodes are): where the fragments start
        self.negfree = {t: {c: [-n.free_gpus for n in ns] for c, ns in of.items()} for t, of in self.classes.items()}
        #: GPU type -> whether the paper's rule gives no more spans than buckets would (at most one span per
        #: start node with free GPUs, against up to SPANS_PER_BUCKET per bucket): there it stays
        self.every_start = {t: sum(len(ns) for ns in of.values())
                            <= max(SPANS_PER_BUCKET * len(of), EVERY_START_NODES)
                            for t, of in self.classes.items()}
        self._fragment_free: dict[tuple[str, int], tuple[dict[str, int], dict[str, list[NodeView]]]] = {}
        self._probes: dict[tuple[str, int], list[tuple[str, Config]]] = {}
        #: (type, requirement, classes slowest first, where a speed equals the one before) -> :func:`_bucketed`'s
        #: spans: they depend on the job's speeds only through that order, which many jobs share
        self._spans: dict[tuple[str, int, tuple[str, ...], tuple[bool, ...]],
                          dict[tuple[tuple[str, int], ...], Config]] = {}

    def fragments(self, gpu_type: str, server_class: str, requirement: int) -> list[NodeView]:
        """The class's nodes that cannot hold ``requirement`` alone (a suffix: most free first)."""
        return self.classes[gpu_type][server_class][bisect_right(self.negfree[gpu_type][server_class], -requirement):]

    def probes(self, gpu_type: str, requirement: int) -> list[tuple[str, Config]]:
        """Per server class of ``gpu_type``, the config :func:`class_speeds` asks about: ``requirement`` GPUs
        (at most the node's size) on its first node; made once per type and requirement."""
        key = (gpu_type, requirement)
        got = self._probes.get(key)
        if got is None:
            got = self._probes[key] = [(c, freeze_config({ns[0].name: min(requirement, ns[0].total_gpus)}))
                                       for c, ns in self.classes.get(gpu_type, {}).items()]
        return got

    def fragment_free(self, gpu_type: str, requirement: int) -> tuple[dict[str, int], dict[str, list[NodeView]]]:
        """Server class -> the free GPUs of its :meth:`fragments`, and class -> those fragments (worked out
        once per type and requirement)."""
        key = (gpu_type, requirement)
        got = self._fragment_free.get(key)
        if got is None:
            nodes = {c: self.fragments(gpu_type, c, requirement) for c in self.classes.get(gpu_type, {})}
            got = self._fragment_free[key] = ({c: sum(n.free_gpus for n in ns) for c, ns in nodes.items()}, nodes)
        return got


    def spans(self, gpu_type: str, requirements: Sequence[int],
              speed: Mapping[str, float]) -> list[dict[tuple[tuple[str, int], ...], Config]]:
        """:func:`_bucketed` for each of ``requirements`` (by their items), made once per order of the
        classes by ``speed`` (with its ties) and requirement: jobs whose classes order alike share the very
        span objects. Speeds that are not numbers are compared class by class, for this job alone."""
        by_speed = sorted(self.classes.get(gpu_type, {}), key=lambda c: (speed[c], c))
        speeds = [speed[c] for c in by_speed]
        if any(math.isnan(v) for v in speeds):
            return [_bucketed(self, gpu_type, r, speed) for r in requirements]
        order = tuple(by_speed)
        ties = tuple(speeds[k] == speeds[k - 1] for k in range(1, len(speeds)))
        memo = self._spans
        out = []
        for r in requirements:
            key = (gpu_type, r, order, ties)
            got = memo.get(key)
            if got is None:
                got = memo[key] = _bucketed(self, gpu_type, r, speed)
            out.append(got)
        return out


def class_speeds(job: JobView, index: SpanIndex, gpu_type: str) -> dict[str, float]:
    """The job's estimated throughput on one node of each server class of ``gpu_type`` (its smallest
    request, at most the node's size): how :func:`bucketed_spans` orders the classes for this job."""
    return {c: float(job.throughput(cfg)) for c, cfg in index.probes(gpu_type, job.requirements[0])}


def bucketed_spans(index: SpanIndex, gpu_type: str, requirement: int, speed: Mapping[str, float]) -> list[Config]:
    """Spanning configs of ``requirement`` GPUs on ``gpu_type``, one per (slowest class, variant): see the
    module docstring. ``speed``: server class -> the job's speed there (:func:`class_speeds`)."""
    return list(_bucketed(index, gpu_type, requirement, speed).values())


def _bucketed(index: SpanIndex, gpu_type: str, requirement: int,
              speed: Mapping[str, float]) -> dict[tuple[tuple[str, int], ...], Config]:
    """:func:`bucketed_spans` by their items. For each slowest class the classes at least as fast are a
    suffix of the classes ordered by speed (its start moves with the speed; their free GPUs are suffix
    sums), and a span walks only the classes that add GPUs to it (each at least one): a call costs
    O(C log C + C x requirement) for C classes, not O(C^2)."""
    of_type = index.classes.get(gpu_type, {})
    free = index.free.get(gpu_type, {})
    by_speed = sorted(of_type, key=lambda c: (speed[c], c))
    speeds = [speed[c] for c in by_speed]
    if any(math.isnan(v) for v in speeds):  # no order to walk: every class compared with every other
        return _spans_compared(index, gpu_type, requirement, speed, by_speed)
    frag, frag_nodes = index.fragment_free(gpu_type, requirement)
    total, fragments_total = _suffix_sums([free[c] for c in by_speed]), _suffix_sums([frag[c] for c in by_speed])
    with_fragments = [k for k, c in enumerate(by_speed) if frag[c]]
    out: dict[tuple[tuple[str, int], ...], Config] = {}
    n_classes, n_fragmented = len(by_speed), len(with_fragments)
    lo = first = 0  # by_speed[lo:]: the classes at least as fast as this one; with_fragments[first:] of them
    for i, slowest in enumerate(by_speed):
        if speeds[i] != speeds[lo]:  # sorted: a new speed starts here
            lo = i
            while first < n_fragmented and with_fragments[first] < lo:
                first += 1
        if total[lo] < requirement:
            continue
        # slowest first, then the others at least as fast in speed order, until the span is full
        placed: dict[str, int] = {}
        left = _take(of_type[slowest], False, placed, requirement)
        k = lo
        while left and k < n_classes:
            if k != i:
                left = _take(of_type[by_speed[k]], False, placed, left)
            k += 1
        _keep(out, placed, left)
        if fragments_total[lo] < requirement:
            continue  # the fragments of these classes cannot hold it
        for backwards in (False, True):  # the classes without fragments add nothing to these spans: skipped
            placed = {}
            left = _take(frag_nodes[slowest], backwards, placed, requirement)
            m = first
            while left and m < n_fragmented:
                if with_fragments[m] != i:
                    left = _take(frag_nodes[by_speed[with_fragments[m]]], backwards, placed, left)
                m += 1
            _keep(out, placed, left)
    return out


def _take(nodes: Sequence[NodeView], backwards: bool, placed: dict[str, int], left: int) -> int:
    """Each of ``nodes`` in order (or ``backwards``) gives the span all it has, the last what is ``left``;
    what is left after them."""
    for n in (reversed(nodes) if backwards else nodes):
        take = n.free_gpus if n.free_gpus < left else left
        placed[n.name] = take
        left -= take
        if not left:
            return 0
    return left


def _keep(out: dict[tuple[tuple[str, int], ...], Config], placed: dict[str, int], left: int) -> None:
    """A full span of more than one node joins ``out`` unless it is there (every piece is at least 1 GPU:
    its sorted items are its config's)."""
    if not left and len(placed) > 1:
        key = tuple(sorted(placed.items()))
        if key not in out:
            out[key] = MappingProxyType({n: int(g) for n, g in key})  # freeze_config(placed): sorted, none 0


def _suffix_sums(values: Sequence[int]) -> list[int]:
    out = [0] * (len(values) + 1)
    for k in range(len(values) - 1, -1, -1):
        out[k] = out[k + 1] + values[k]
    return out


def _spans_compared(index: SpanIndex, gpu_type: str, requirement: int, speed: Mapping[str, float],
                    by_speed: list[str]) -> dict[tuple[tuple[str, int], ...], Config]:
    """:func:`_bucketed` where some speed is not a number: each class's faster ones by comparison."""
    of_type = index.classes.get(gpu_type, {})
    free = index.free.get(gpu_type, {})
    out: dict[tuple[tuple[str, int], ...], Config] = {}
    for slowest in by_speed:
        floor = speed[slowest]
        eligible = [slowest] + [c for c in by_speed if c != slowest and speed[c] >= floor]
        if sum(free[c] for c in eligible) < requirement:
            continue
        for fragments in (0, 1, 2):
            placed: dict[str, int] = {}
            left = requirement
            for c in eligible:
                nodes = of_type[c] if not fragments else index.fragments(gpu_type, c, requirement)
                left = _take(nodes, fragments == 2, placed, left)
                if not left:
                    break
            _keep(out, placed, left)
    return out


def is_high_sensitivity(job: JobView, sigma: float) -> bool:
    return job.sensitivity > sigma


def generate_configs(job: JobView, cluster: ClusterView, sigma: float, *, one_per_class: bool = False,
                     spans: str = "every", index: SpanIndex | None = None) -> list[Config]:
    """All candidate configs of ``job`` on ``cluster``'s free GPUs (see module docstring), no duplicates.

    ``one_per_class``: aggregated configs only on the first fitting node of each server class (the
    compact ILP stands one config for all interchangeable nodes of a class). ``spans``: one of
    :data:`SPAN_RULES`; ``index`` (bucketed spans only): the cluster's :class:`SpanIndex`, when the
    caller plans many jobs on one cluster."""
    if spans not in SPAN_RULES:
        raise ValueError(f"spans must be one of {', '.join(SPAN_RULES)}, got {spans!r}")
    seen: dict[tuple[tuple[str, int], ...], Config] = {}

    def add(cfg: Config) -> None:
        seen.setdefault(tuple(cfg.items()), cfg)

    high = is_high_sensitivity(job, sigma)
    if job.nodes is not None:  # only the nodes it may use (planner.eligible), their own span index
        confined = confine(cluster, job)
        if confined is not cluster:
            cluster = confined
            index = cluster._derived("span_index", lambda: SpanIndex(confined)) if index is not None else None
    if spans == "bucketed" and index is None:
        index = SpanIndex(cluster)
    for gpu_type in cluster.gpu_types:
        of_type = cluster.nodes_of_type(gpu_type)
        largest = cluster.largest_node(gpu_type)
        for r in job.requirements:
            for key, cfg in aggregated_items(cluster, gpu_type, r, one_per_class):
                seen.setdefault(key, cfg)  # add(cfg), its key made once per view
        if not high or job.requirements[0] > largest:
            if index is not None and not index.every_start.get(gpu_type, True):
                for spans_of_r in index.spans(gpu_type, job.requirements, class_speeds(job, index, gpu_type)):
                    for key, cfg in spans_of_r.items():
                        seen.setdefault(key, cfg)  # add(cfg): the key is its items
            else:
                for r in job.requirements:
                    for cfg in iter_distributed(of_type, r):
                        add(cfg)
    if job.current:
        cur = freeze_config(job.current)
        fits = all(n in {x.name for x in cluster.nodes} and g <= cluster.node(n).free_gpus for n, g in cur.items())
        spans_ok = len(cur) == 1 or not high or all(
            job.requirements[0] > max(n.total_gpus for n in cluster.nodes_of_type(cluster.node(name).gpu_type))
            for name in cur
        ) if fits else False
        if cur and fits and spans_ok and config_gpus(cur) in job.requirements:
            add(cur)
    return list(seen.values())


def iter_configs(job: JobView, cluster: ClusterView, sigma: float) -> Iterator[Config]:
    """The configs of :func:`generate_configs` with ``one_per_class`` and every span (no current config),
    lazily and cheapest first: every single-node config of every type, then the spans; for a caller that
    needs one config with a positive estimate (:func:`planner.servable.why_unservable`)."""
    high = is_high_sensitivity(job, sigma)
    cluster = confine(cluster, job)
    types = cluster.gpu_types
    for t in types:
        for r in job.requirements:
            yield from aggregated_of(cluster, t, r, True)
    for t in types:  # (a caller served by a single-node config never gets here)
        if not high or job.requirements[0] > cluster.largest_node(t):
            of_type = cluster.nodes_of_type(t)
            for r in job.requirements:
                yield from iter_distributed(of_type, r)
