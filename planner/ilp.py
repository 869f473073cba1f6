"""The priority-weighted placement ILP (Hops eq. 11-13) with python-mip, in two exact formulations.

Last step of a planning: :mod:`planner.hops` hands in the window jobs' candidate configs
(:class:`Candidate`: job, concrete config, throughput gain G) and the eq. 11 weights; this module
returns a :class:`Solution` (job -> config or None) with objective, best bound, gap and sizes.

``plain`` is eq. 11-13 as written: one binary per candidate, ≤ 1 per job (eq. 12), per-node GPU
capacity (eq. 13). Its size grows with jobs × requirements × nodes.

``compact`` uses the structure of the problem: nodes of one server class are interchangeable (a
config's throughput depends on the server classes and GPU counts it uses, not on node names, which is
how the views define heterogeneity). A config becomes a *signature*, the multiset of its pieces
(GPUs on one node): a single-node config's piece is keyed by its server class (any node of the class
with room will do); a multi-node config's pieces by (class, free GPUs of the node), because the
paper's spanning configs fill each node but the last. One binary per (job, signature). Node
capacity is enforced exactly with packing patterns (Gilmore-Gomory) per group of nodes with the
same class and free GPUs: a pattern is a maximal multiset of piece sizes that fits one such node;
integer z[g, p] counts the group's nodes packed with pattern p (Σ_p z[g, p] ≤ |g|); multi-node
pieces of a size use at most the slots of that size their own group's patterns offer, and all pieces
of a class and size at most the slots of that size in all the class's groups (single-node pieces
take whatever slots of their class the multi-node ones leave). Any per-node packing is dominated by
maximal patterns and any pattern solution is realised node by node, so the optimum equals that of
the plain model over the candidate set closed under swapping interchangeable nodes (tests
cross-check this on random instances). The size depends on classes, free-GPU values and patterns,
not on node counts; its LP relaxation is tight, so the LP is solved first and rounded (a proof of the
gap against the LP bound), then LP dives, and branch and bound only when those fall short.

A running job's current config can have two partial pieces on nodes of one kind that would fit one
node together (placed by a fragment plan on idle GPUs, read by the round plan on wholly free nodes);
pattern counts alone would let them share a node, which no placement realises. Such a signature is
pinned to its own config's nodes: each of those nodes is a group of its own, and pieces are placed in
laminar eligible sets (pinned node ⊂ family of (type, class, free) ⊂ class), one constraint per set
and size, which keeps the model exact (:func:`shares_a_node`).

The solution is mapped back to concrete nodes so that running jobs keep their nodes: a job whose
signature is unchanged (an equivalent config: same classes and GPU counts) stays where it runs
whenever the others can be packed around it (:func:`keep_running`, :func:`keep_equivalent`); of
equally good roundings the one moving the fewest running jobs is kept. Moving a job to an
equivalent config would cost a restart for nothing (DESIGN.md: "a job whose config is unchanged
keeps running").
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import mip

from planner.views import Config, NodeView, freeze_config

log = logging.getLogger(__name__)

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


@dataclass
class Solution:
    """What a solve returned. ``status``: "optimal", "feasible" (time limit hit, incumbent kept),
    or "none" (no integer solution found; ``assignments`` empty)."""

    assignments: dict[str, Config | None]
    objective: float | None
    bound: float | None
    gap: float | None
    status: str
    solve_time: float
    n_vars: int
    n_int_vars: int
    n_constraints: int
    formulation: str
    solver: str
    extra: dict[str, object] = field(default_factory=dict)


def objective_of(assignments: Mapping[str, Config | None], cands: Sequence[Candidate],
                 weights: Mapping[str, float], nodes: Sequence[NodeView] | None = None) -> float:
    """Eq. 11 value of an assignment. Each chosen config must be a candidate or, with ``nodes``, have
    a candidate's signature (the compact model's interchangeable placements)."""
    if nodes is not None:
        by_name = {n.name: n for n in nodes}
        key = lambda j, cfg: (j, signature(cfg, by_name))  # noqa: E731
    else:
        key = lambda j, cfg: (j, tuple(cfg.items()))  # noqa: E731
    gain: dict[object, float] = {}
    for c in cands:
        k = key(c.job_id, c.config)
        gain[k] = max(gain.get(k, 0.0), c.gain)
    return sum(weights[j] * gain[key(j, cfg)] for j, cfg in assignments.items() if cfg)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(bound) < 1e-12:
        return 0.0
    return max(bound - objective, 0.0) / abs(bound)


def _model(solver: str, gap: float, threads: int) -> mip.Model:
    m = mip.Model(sense=mip.MAXIMIZE, solver_name=solver)
    m.verbose = 0
    m.max_mip_gap = gap
    m.max_mip_gap_abs = 1e-9
    m.threads = threads
    if solver == "CBC":
        # CBC's MIP preprocessing costs seconds on these models and finds little (measured: 2.2 s ->
        # 0.4 s on a 512-GPU round at the same gap); the pattern model is already tight
        m.preprocess = 0
    return m


@contextlib.contextmanager
def _quiet_stdout(active: bool) -> Iterator[None]:
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


def _finish(m: mip.Model, status: mip.OptimizationStatus) -> tuple[str, float | None, float | None]:
    if status == mip.OptimizationStatus.OPTIMAL:
        return "optimal", float(m.objective_value), float(m.objective_bound)
    if status == mip.OptimizationStatus.FEASIBLE:
        return "feasible", float(m.objective_value), float(m.objective_bound)
    bound = m.objective_bound if status == mip.OptimizationStatus.NO_SOLUTION_FOUND else None
    return "none", None, (float(bound) if bound is not None else None)


def solve_plain(cands: Sequence[Candidate], weights: Mapping[str, float], capacity: Mapping[str, int], *,
                solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1) -> Solution:
    """Eq. 11-13 with one binary per candidate config (the reference formulation)."""
    t0 = time.perf_counter()
    m = _model(solver, gap, threads)
    xs = [m.add_var(var_type=mip.BINARY) for _ in cands]
    by_job: dict[str, list[int]] = defaultdict(list)
    by_node: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for k, c in enumerate(cands):
        by_job[c.job_id].append(k)
        for node, g in c.config.items():
            by_node[node].append((k, g))
    m.objective = mip.xsum(weights[c.job_id] * c.gain * xs[k] for k, c in enumerate(cands))
    for ks in by_job.values():
        m += mip.xsum(xs[k] for k in ks) <= 1  # eq. 12
    for node, uses in by_node.items():
        m += mip.xsum(g * xs[k] for k, g in uses) <= capacity[node]  # eq. 13
    status = m.optimize(max_seconds=time_limit) if cands else mip.OptimizationStatus.OPTIMAL
    if not cands:
        return Solution({}, 0.0, 0.0, 0.0, "optimal", time.perf_counter() - t0, 0, 0, 0, "plain", solver)
    state, obj, bound = _finish(m, status)
    assignments: dict[str, Config | None] = {j: None for j in by_job}
    if state != "none":
        for k, c in enumerate(cands):
            if xs[k].x is not None and xs[k].x >= 0.5:
                assignments[c.job_id] = c.config
    else:
        assignments = {}
    return Solution(assignments, obj, bound, relative_gap(obj, bound), state, time.perf_counter() - t0,
                    m.num_cols, m.num_int, m.num_rows, "plain", solver)


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
    return tuple(sorted(((nodes[n].gpu_type, nodes[n].server_class, nodes[n].free_gpus), g) for n, g in config.items()))


def shares_a_node(sig: Signature) -> bool:
    """Whether two pieces of one multi-node signature could share a node of their kind (their GPUs
    add up to at most the node's free GPUs).

    Configs built on this round's free GPUs never do (every piece but the last fills its node), but a
    running job's current config can: planned in a fragment plan on a node's idle GPUs, it reads as two
    partial pieces on nodes that the round plan now counts as wholly free. Pattern counts alone would
    let both pieces onto one node (no real placement then exists), so the model pins such a
    signature to its own config's nodes (see :func:`solve_compact`)."""
    by_key: dict[BinKey, list[int]] = defaultdict(list)
    for key, g in sig:
        if key[2]:
            by_key[key].append(g)
    return any(len(gs) > 1 and sum(sorted(gs)[:2]) <= key[2] for key, gs in by_key.items())


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
        for n in nodes:
            if n.free_gpus > 0:
                self.by_key[piece_key(n, True)].append(n.name)
                self.by_key[piece_key(n, False)].append(n.name)

    def place(self, sig: Signature, prefer: Config | None = None) -> Config | None:
        if prefer is not None and all(self.left.get(n, -1) >= g for n, g in prefer.items()):
            for n, g in prefer.items():
                self.left[n] -= g
            return prefer
        placed: dict[str, int] = {}
        for key, g in sorted(sig, key=lambda p: -p[1]):
            fits = [n for n in self.by_key.get(key, ()) if self.left[n] >= g and n not in placed]
            if key[2] and g == key[2]:
                fits = [n for n in fits if self.left[n] == key[2]]  # a full piece needs an untouched node
            if not fits:
                for n, used in placed.items():
                    self.left[n] += used
                return None
            n = min(fits, key=lambda name: self.left[name])
            placed[n] = g
            self.left[n] -= g
        return freeze_config(placed)


def _stays(job_id: str, sig: Signature, current: Mapping[str, Config], by_name: Mapping[str, NodeView]) -> bool:
    """Whether ``job_id`` runs now in a config with signature ``sig`` (it can keep its nodes)."""
    cur = current.get(job_id)
    return bool(cur) and all(n in by_name for n in cur) and signature(cur, by_name) == sig  # type: ignore[arg-type]


def moved(assignments: Mapping[str, Config | None], current: Mapping[str, Config]) -> int:
    """How many running jobs an assignment moves or stops (each one a preemption)."""
    return sum(1 for j, cur in current.items() if cur and dict(assignments.get(j) or {}) != dict(cur))


def keep_running(assignments: Mapping[str, Config | None], nodes: Sequence[NodeView],
                 current: Mapping[str, Config]) -> dict[str, Config | None] | None:
    """The same signatures on concrete nodes, with running jobs whose signature is unchanged on their
    current nodes where possible: those go first (their current configs are disjoint, so they all
    fit), then every other job whose nodes in ``assignments`` still have room, then the ones displaced
    (best fit, biggest first). When a displaced job finds no room, the running jobs that took its
    nodes give them back (they keep the node-equivalent config ``assignments`` gave them) and the
    mapping is tried again. ``None`` when no job keeps its nodes this way."""
    by_name = {n.name: n for n in nodes}
    chosen = {j: signature(cfg, by_name) for j, cfg in assignments.items() if cfg}
    stays = {j for j in chosen if _stays(j, chosen[j], current, by_name)}
    if all(dict(assignments[j] or {}) == dict(current[j]) for j in stays):
        return dict(assignments)
    size = {j: (-sum(g for _, g in chosen[j]), -len(chosen[j]), j) for j in chosen}
    rest_order = sorted(chosen, key=size.__getitem__)

    def attempt(stays: set[str], originals_first: bool) -> tuple[dict[str, Config | None], str | None]:
        packer = Packer(nodes)
        out: dict[str, Config | None] = {j: None for j, cfg in assignments.items() if not cfg}
        for j in sorted(stays):
            out[j] = packer.place(chosen[j], freeze_config(current[j]))
        later = []
        for j in (j for j in rest_order if j not in stays):
            cfg = assignments[j]
            if not originals_first or (cfg and all(packer.left[n] >= g for n, g in cfg.items())):
                out[j] = packer.place(chosen[j], cfg)
                if out[j] is None:
                    return out, j
            else:
                later.append(j)
        for j in later:
            out[j] = packer.place(chosen[j])
            if out[j] is None:
                return out, j
        return out, None

    while stays:
        taken: set[str] = set()
        for originals_first in (True, False):
            out, failed = attempt(stays, originals_first)
            if failed is None:
                return out
            taken |= set(assignments[failed] or {})
        blockers = {s for s in stays if taken & set(current[s])}
        if not blockers:
            return None
        stays -= blockers
    return None


def solve_compact(cands: Sequence[Candidate], weights: Mapping[str, float], nodes: Sequence[NodeView], *,
                  solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                  current: Mapping[str, Config] | None = None, lp_rounding: bool = True,
                  dives: int = 4) -> Solution:
    """Eq. 11-13 over node-class signatures with exact packing patterns (see module docstring).

    With ``lp_rounding`` the LP relaxation is solved first and rounded (jobs by LP value, then the
    rest greedily); when the rounded plan is within ``gap`` of the LP bound that is a proof of the
    gap and no branch and bound runs; otherwise up to ``dives`` LP dives (fix the most decided
    fractional choices to 1, re-solve the LP, round again) and, failing those, the MIP, warm-started
    from the best plan found. The gap reported is always against a proven bound.
    """
    t0 = time.perf_counter()
    current = current or {}
    by_name = {n.name: n for n in nodes}
    best: dict[tuple[str, Signature], Candidate] = {}
    for c in cands:
        key = (c.job_id, signature(c.config, by_name))
        if key not in best or c.gain > best[key].gain:
            best[key] = c
    keys = list(best)
    jobs = list(dict.fromkeys(c.job_id for c in cands))
    if not keys:
        return Solution({}, 0.0, 0.0, 0.0, "optimal", time.perf_counter() - t0, 0, 0, 0, "compact", solver)

    # groups of interchangeable nodes (type, class, free GPUs); a node that a signature sharing a node
    # (see shares_a_node) is pinned to forms a group of its own, keyed by its name
    pinned = {k for k in keys if shares_a_node(k[1])}
    pinned_nodes = {n for k in pinned for n in best[k].config}
    group_of: dict[str, GroupKey] = {}
    groups: dict[GroupKey, list[str]] = defaultdict(list)
    for n in nodes:
        if n.free_gpus > 0:
            group_of[n.name] = (n.gpu_type, n.server_class, n.free_gpus, n.name if n.name in pinned_nodes else "")
            groups[group_of[n.name]].append(n.name)
    pieces: dict[tuple[str, Signature], tuple[ModelPiece, ...]] = {}
    for k in keys:
        if k in pinned:
            pieces[k] = tuple(((by_name[n].gpu_type, by_name[n].server_class, by_name[n].free_gpus, n), g)
                              for n, g in sorted(best[k].config.items()))
        else:
            pieces[k] = tuple(((t, c, f, ""), g) for (t, c, f), g in k[1])
    eligible = _Eligible(groups)
    sizes: dict[GroupKey, set[int]] = defaultdict(set)
    for k in keys:
        for pk, g in pieces[k]:
            for grp in eligible(pk):
                if g <= grp[2]:
                    sizes[grp].add(g)
    patterns = {grp: maximal_patterns(grp[2], sorted(ss)) for grp, ss in sizes.items()}

    m = _model(solver, gap, threads)
    xs = {k: m.add_var(var_type=mip.BINARY) for k in keys}
    zs = {(grp, p): m.add_var(var_type=mip.INTEGER, lb=0, ub=len(groups[grp]))
          for grp, ps in patterns.items() for p in ps}
    m.objective = mip.LinExpr(variables=[xs[k] for k in keys],
                              coeffs=[weights[j] * best[(j, s)].gain for j, s in keys])
    per_job: dict[str, list[mip.Var]] = defaultdict(list)
    # eq. 13 as a transportation problem: pieces of a size may use the slots of that size in their
    # eligible groups. The eligible sets (a pinned node, a (type, class, free) family, a class) are
    # laminar, so one constraint per set and size is exact: the pieces eligible only inside it use at
    # most its slots.
    within: dict[tuple[GroupKey, int], list[tuple[int, mip.Var]]] = defaultdict(list)
    for k in keys:
        per_job[k[0]].append(xs[k])
        for (pk, g), cnt in Counter(pieces[k]).items():
            for scope in _scopes(pk):
                within[(scope, g)].append((cnt, xs[k]))

    def slots(grp: GroupKey, g: int) -> list[tuple[int, mip.Var]]:
        return [(p.count(g), zs[(grp, p)]) for p in patterns.get(grp, ()) if g in p]

    def at_most(uses: Sequence[tuple[float, mip.Var]], caps: Sequence[tuple[float, mip.Var]], rhs: float) -> None:
        coef: dict[int, float] = defaultdict(float)  # one var may appear in several pieces: sum them
        var: dict[int, mip.Var] = {}
        for sign, terms in ((1.0, uses), (-1.0, caps)):
            for c, v in terms:
                coef[v.idx] += sign * c
                var[v.idx] = v
        m.add_constr(mip.LinExpr(variables=[var[i] for i in coef], coeffs=list(coef.values())) <= rhs)

    for vs in per_job.values():
        at_most([(1, v) for v in vs], [], 1)  # eq. 12
    for grp, ps in patterns.items():
        at_most([(1, zs[(grp, p)]) for p in ps], [], len(groups[grp]))
    for (scope, g), uses in within.items():  # eq. 13
        at_most(uses, [s for grp in eligible(scope) for s in slots(grp, g)], 0)
    n_vars, n_int, n_rows = m.num_cols, m.num_int, m.num_rows
    extra: dict[str, object] = {"signatures": len(keys), "patterns": len(zs), "groups": len(groups),
                                "pinned": len(pinned)}

    def result(assign: dict[str, Config | None], state: str, obj: float | None, bound: float | None,
               method: str) -> Solution:
        for j in jobs:
            assign.setdefault(j, None)
        if current:
            assign = keep_running_jobs(assign, nodes, current)
        extra["method"] = method
        return Solution(assign, obj, bound, relative_gap(obj, bound), state, time.perf_counter() - t0,
                        n_vars, n_int, n_rows, "compact", solver, extra=extra)

    def take_mip() -> tuple[dict[str, Config | None], float]:
        chosen = {j: s for (j, s), x in xs.items() if x.x is not None and x.x >= 0.5}
        pattern_use = {gp: int(round(z.x or 0.0)) for gp, z in zs.items()}
        return _realise(chosen, best, nodes, groups, pattern_use, current, pieces, eligible), float(m.objective_value)

    def time_left() -> float:
        return max(time_limit - (time.perf_counter() - t0), 0.05)

    incumbent: dict[str, Config | None] | None = None
    value = 0.0
    lp_bound: float | None = None
    if lp_rounding:
        with _quiet_stdout(solver == "CBC"):
            status = m.optimize(relax=True, max_seconds=time_limit)
        if status == mip.OptimizationStatus.OPTIMAL:
            lp_bound = float(m.objective_value)
            tolerance = gap * abs(lp_bound) + 1e-9
            xval = {k: float(x.x or 0.0) for k, x in xs.items()}
            incumbent, value = _round(keys, best, xval, weights, nodes, current)
            extra["lp_bound"] = lp_bound
            if lp_bound - value <= tolerance:
                return result(incumbent, "optimal", value, lp_bound, "lp-rounding")
            # LP dive: fix the most decided fractional choices (one per job) to 1, re-solve the LP,
            # round again; the root LP bound keeps certifying the gap
            fixed: list[mip.Var] = []
            for dive in range(dives):
                frac = sorted((k for k in keys if 1e-6 < xval[k] < 1 - 1e-6), key=lambda k: -xval[k])
                if not frac or time_left() < 0.1:
                    break
                picked: set[str] = set()
                for k in frac[: max(1, len(frac) // 3)]:
                    if k[0] not in picked:
                        picked.add(k[0])
                        xs[k].lb = 1.0
                        fixed.append(xs[k])
                with _quiet_stdout(solver == "CBC"):
                    status = m.optimize(relax=True, max_seconds=time_left())
                if status != mip.OptimizationStatus.OPTIMAL:
                    break
                xval = {k: float(x.x or 0.0) for k, x in xs.items()}
                dived, dived_value = _round(keys, best, xval, weights, nodes, current)
                extra["dives"] = dive + 1
                if dived_value > value:
                    incumbent, value = dived, dived_value
                if lp_bound - value <= tolerance:
                    break
            for v in fixed:
                v.lb = 0.0
            if lp_bound - value <= tolerance:
                return result(incumbent, "optimal", value, lp_bound, "lp-dive")
            _warm_start(m, incumbent, by_name, xs, zs, sizes, group_of)
    status = m.optimize(max_seconds=time_left())
    state, obj, bound = _finish(m, status)
    if incumbent is not None and (state == "none" or obj is None or obj <= value):
        # the rounded plan is at least as good as what branch and bound returned; the tighter of the
        # two proven bounds certifies it
        proven = [b for b in (bound, lp_bound) if b is not None]
        tight = min(proven) if proven else None
        ok = state == "optimal" or (tight is not None and tight - value <= gap * abs(tight) + 1e-9)
        return result(incumbent, "optimal" if ok else "feasible", value, tight, "lp-rounding")
    if state == "none":
        return result({}, "none", None, bound, "mip")
    assign, obj = take_mip()
    return result(assign, state, obj, bound, "mip")


def keep_equivalent(assignments: Mapping[str, Config | None], nodes: Sequence[NodeView],
                    current: Mapping[str, Config]) -> dict[str, Config | None]:
    """Put back on its current nodes every running job that ``assignments`` moves to other nodes with
    the same signature (an equivalent config: same server classes and GPU counts, hence the same
    throughput), whenever its current nodes have room in the rest of the plan; repeated until no job
    moves back. Afterwards no running job is moved to an equivalent config that it could keep."""
    by_name = {n.name: n for n in nodes}
    out = dict(assignments)
    left = {n.name: n.free_gpus for n in nodes}
    for cfg in out.values():
        for n, g in (cfg or {}).items():
            left[n] -= g
    changed = True
    while changed:
        changed = False
        for j in sorted(current):
            cur, cfg = current[j], out.get(j)
            if not cfg or not cur or dict(cfg) == dict(cur) or not all(n in by_name for n in cur):
                continue
            if signature(cfg, by_name) != signature(cur, by_name):
                continue
            for n, g in cfg.items():
                left[n] += g
            keep = all(left[n] >= g for n, g in cur.items())
            for n, g in (cur if keep else cfg).items():
                left[n] -= g
            if keep:
                out[j] = freeze_config(cur)
                changed = True
    return out


def relabel_nodes(assignments: Mapping[str, Config | None], nodes: Sequence[NodeView],
                  current: Mapping[str, Config]) -> dict[str, Config | None]:
    """The same plan with whole node contents exchanged between interchangeable nodes (same type,
    class and free GPUs: every config keeps its signature and every node its load) so that as many
    running jobs as possible end on their current nodes.

    A bipartite matching per group of nodes: plan node b to node n is worth, for each running job
    with an unchanged signature and b's share equal to its current share of n, 1 / its node count
    (a whole job for a single-node job). The matching polytope is integral, so the LP is exact."""
    by_name = {n.name: n for n in nodes}
    contents: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for j, cfg in assignments.items():
        for n, g in (cfg or {}).items():
            contents[n].append((j, g))
    worth: dict[tuple[str, str], float] = defaultdict(float)
    for j, cfg in assignments.items():
        cur = current.get(j)
        if not cfg or not cur or not all(n in by_name for n in cur) or \
                signature(cfg, by_name) != signature(cur, by_name):
            continue
        for b, g in cfg.items():
            for n, h in cur.items():
                if g == h and piece_key(by_name[b], True) == piece_key(by_name[n], True):
                    worth[(b, n)] += 1.0 / len(cur)
    # a node's contents staying put is free; only pairs that gain over that need the matching
    if not any(b != n and w > worth.get((b, b), 0.0) for (b, n), w in worth.items()):
        return dict(assignments)
    m = mip.Model(sense=mip.MAXIMIZE, solver_name="CBC")
    m.verbose = 0
    pairs = list(worth)
    # every node keeps its own contents unless the matching moves them: identity pairs as fallbacks
    for n in {p for pair in pairs for p in pair}:
        if (n, n) not in worth:
            pairs.append((n, n))
    x = {pair: m.add_var(var_type=mip.BINARY) for pair in pairs}
    m.objective = mip.xsum((worth.get(pair, 0.0) + 1e-6 * (pair[0] == pair[1])) * x[pair] for pair in pairs)
    for side in (0, 1):
        groups: dict[str, list[mip.Var]] = defaultdict(list)
        for pair in pairs:
            groups[pair[side]].append(x[pair])
        for vs in groups.values():
            m += mip.xsum(vs) <= 1
    with _quiet_stdout(True):
        status = m.optimize(max_seconds=5.0)
    if status not in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE):
        return dict(assignments)
    target: dict[str, str] = {b: n for (b, n), v in x.items() if v.x is not None and v.x >= 0.5}
    # nodes whose contents moved away and that received none: complete the permutation per group
    free_targets: dict[BinKey, list[str]] = defaultdict(list)
    taken = set(target.values())
    for n in by_name:
        if n not in taken:
            free_targets[piece_key(by_name[n], True)].append(n)
    for b in sorted(contents):
        if b not in target:
            pool = free_targets[piece_key(by_name[b], True)]
            target[b] = b if b in pool else pool[0]
            pool.remove(target[b])
    return {j: (freeze_config({target.get(n, n): g for n, g in cfg.items()}) if cfg else cfg)
            for j, cfg in assignments.items()}


def keep_running_jobs(assignments: Mapping[str, Config | None], nodes: Sequence[NodeView],
                      current: Mapping[str, Config]) -> dict[str, Config | None]:
    """What the planner does to a finished plan so running jobs keep their nodes: the better (fewer
    moved running jobs) of the plan and of :func:`keep_running`'s re-packing, each after
    :func:`relabel_nodes`; then :func:`keep_equivalent`. Signatures, hence throughput and the
    objective, are unchanged."""
    if not current:
        return dict(assignments)
    options = [relabel_nodes(assignments, nodes, current)]
    repacked = keep_running(assignments, nodes, current)
    if repacked is not None:
        options.append(relabel_nodes(repacked, nodes, current))
    best = min(options, key=lambda a: moved(a, current))
    return keep_equivalent(best, nodes, current)


def _scopes(pk: GroupKey) -> list[GroupKey]:
    """The eligible sets containing a piece's own, innermost first: its pinned node, its (type,
    class, free) family, its class (a single-node piece's key is its class: free 0)."""
    t, c, f, pin = pk
    out = [pk]
    if pin:
        out.append((t, c, f, ""))
    if f:
        out.append((t, c, 0, ""))
    return out


class _Eligible:
    """The node groups a model piece key may use: a class key any group of the class, a family key
    every group of the family (pinned nodes included), a pinned key its own node's group."""

    def __init__(self, groups: Mapping[GroupKey, list[str]]) -> None:
        self.groups = groups
        self._class: dict[tuple[str, str], list[GroupKey]] = defaultdict(list)
        self._family: dict[tuple[str, str, int], list[GroupKey]] = defaultdict(list)
        for grp in groups:
            self._class[(grp[0], grp[1])].append(grp)
            self._family[(grp[0], grp[1], grp[2])].append(grp)

    def __call__(self, pk: GroupKey) -> list[GroupKey]:
        t, c, f, pin = pk
        if pin:
            return [pk] if pk in self.groups else []
        if f:
            return list(self._family.get((t, c, f), ()))
        return list(self._class.get((t, c), ()))


def _round(keys: Sequence[tuple[str, Signature]], best: Mapping[tuple[str, Signature], Candidate],
           xval: Mapping[tuple[str, Signature], float], weights: Mapping[str, float],
           nodes: Sequence[NodeView], current: Mapping[str, Config]) -> tuple[dict[str, Config | None], float]:
    """Round an LP solution: (job, signature) pairs by LP value (then weighted gain) placed on real
    nodes while they fit; then every job still out tries its signatures by weighted gain. Of equally
    good roundings the one moving the fewest running jobs wins (the solution is re-mapped once at the
    end, :func:`keep_running_jobs`)."""
    by_name = {n.name: n for n in nodes}

    def prefer(j: str, sig: Signature) -> Config | None:
        if _stays(j, sig, current, by_name):
            return freeze_config(current[j])
        return best[(j, sig)].config

    def score(k: tuple[str, Signature]) -> float:
        return weights[k[0]] * best[k].gain

    # integral LP choices first, biggest first (first-fit-decreasing keeps whole nodes for spanning
    # configs); then either the fractional ones by LP value and everything by weighted gain, or every
    # job by weight with its signatures by LP value. The better of the two is kept.
    def size(k: tuple[str, Signature]) -> tuple[int, int]:
        return (-len(k[1]), -sum(g for _, g in k[1]))

    ones = sorted((k for k in keys if xval[k] > 1 - 1e-6), key=lambda k: (*size(k), k[0]))
    fracs = sorted((k for k in keys if 1e-6 < xval[k] <= 1 - 1e-6), key=lambda k: (-xval[k], -score(k), k[0]))
    by_gain = sorted(keys, key=lambda k: (-score(k), k[0]))
    by_job: dict[str, list[tuple[str, Signature]]] = defaultdict(list)
    for k in keys:
        by_job[k[0]].append(k)
    by_weight = [k for j in sorted(by_job, key=lambda j: (-weights[j], j))
                 for k in sorted(by_job[j], key=lambda k: (-xval[k], -score(k)))]
    best_out: dict[str, Config | None] = {}
    best_value = -1.0
    best_moved = 0
    stay = [k for k in keys if _stays(k[0], k[1], current, by_name)]  # warm start: running jobs where they are
    for order in (ones + fracs + by_gain, ones + by_weight, stay + ones + by_weight):
        packer = Packer(nodes)
        out: dict[str, Config | None] = {}
        value = 0.0
        for k in order:
            if k[0] in out:
                continue
            cfg = packer.place(k[1], prefer(*k))
            if cfg is not None:
                out[k[0]] = cfg
                value += score(k)
        n_moved = moved(out, current)
        tie = abs(value - best_value) <= 1e-9 * max(1.0, abs(value))
        if (value > best_value and not tie) or (tie and n_moved < best_moved):
            best_out, best_value, best_moved = out, value, n_moved
    return best_out, best_value


def _warm_start(m: mip.Model, assign: Mapping[str, Config | None], by_name: Mapping[str, NodeView],
                xs: Mapping[tuple[str, Signature], mip.Var], zs: Mapping[tuple[GroupKey, tuple[int, ...]], mip.Var],
                sizes: Mapping[GroupKey, set[int]], group_of: Mapping[str, GroupKey]) -> None:
    """Hand the rounded plan to the solver as a complete MIP start (x and the pattern counts z)."""
    start: list[tuple[mip.Var, float]] = []
    per_node: dict[str, list[int]] = defaultdict(list)
    for j, cfg in assign.items():
        if not cfg:
            continue
        start.append((xs[(j, signature(cfg, by_name))], 1.0))
        for n, g in cfg.items():
            per_node[n].append(g)
    counts: Counter[tuple[GroupKey, tuple[int, ...]]] = Counter()
    for n, used in per_node.items():
        grp = group_of[n]
        counts[(grp, _extend_to_maximal(used, grp[2], sorted(sizes.get(grp, ()))))] += 1
    if any(key not in zs for key in counts):
        return  # a node packed with sizes the model has no pattern for: no start rather than a wrong one
    start.extend((zs[key], float(v)) for key, v in counts.items())
    m.start = start


def _realise(chosen: Mapping[str, Signature], best: Mapping[tuple[str, Signature], Candidate],
             nodes: Sequence[NodeView], groups: Mapping[GroupKey, list[str]],
             pattern_use: Mapping[tuple[GroupKey, tuple[int, ...]], int],
             current: Mapping[str, Config], pieces: Mapping[tuple[str, Signature], tuple[ModelPiece, ...]],
             eligible: _Eligible) -> dict[str, Config | None]:
    """Concrete nodes for the chosen signatures: first best fit (running jobs whose signature is
    unchanged stay put, otherwise the candidate's own nodes where free), bigger jobs first; if that
    fails, the exact packing the pattern counts describe."""
    by_name = {n.name: n for n in nodes}
    stay = sorted(j for j in chosen if _stays(j, chosen[j], current, by_name))
    rest = sorted((j for j in chosen if j not in stay),
                  key=lambda j: (-sum(g for _, g in chosen[j]), -len(chosen[j]), j))
    packer = Packer(nodes)
    out: dict[str, Config | None] = {}
    for j in stay + rest:
        cfg = packer.place(chosen[j], freeze_config(current[j]) if j in stay else best[(j, chosen[j])].config)
        if cfg is None:
            break
        out[j] = cfg
    else:
        return out
    return _realise_patterns({j: pieces[(j, sig)] for j, sig in chosen.items()}, groups, pattern_use, eligible)


def _realise_patterns(chosen: Mapping[str, tuple[ModelPiece, ...]], groups: Mapping[GroupKey, list[str]],
                      pattern_use: Mapping[tuple[GroupKey, tuple[int, ...]], int],
                      eligible: _Eligible) -> dict[str, Config | None]:
    """The packing the pattern counts describe: each group's nodes get its patterns' slots; pieces
    take slots most restricted first (pinned, then family, then class pieces), which is exact since
    the eligible sets are laminar and the constraints hold for each."""
    slots: dict[tuple[GroupKey, int], list[str]] = defaultdict(list)
    next_node: dict[GroupKey, int] = defaultdict(int)
    for (grp, p), k in sorted(pattern_use.items()):
        for _ in range(k):
            node = groups[grp][next_node[grp]]
            next_node[grp] += 1
            for g in p:
                slots[(grp, g)].append(node)
    placed: dict[str, dict[str, int]] = {j: {} for j in chosen}
    order = sorted(chosen, key=lambda j: (-len(chosen[j]), j))
    for level in (lambda pk: bool(pk[3]), lambda pk: bool(pk[2]) and not pk[3], lambda pk: not pk[2]):
        for j in order:
            for pk, g in chosen[j]:
                if not level(pk):
                    continue
                for grp in eligible(pk):
                    pool = slots.get((grp, g), [])
                    idx = next((i for i, n in enumerate(pool) if n not in placed[j]), None)
                    if idx is not None:
                        placed[j][pool.pop(idx)] = g
                        break
                else:
                    raise RuntimeError(f"planner: pattern packing left no slot for job {j}; this is a bug")
    return {j: freeze_config(p) for j, p in placed.items()}
