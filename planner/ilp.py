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

The solution is mapped back to concrete nodes so that running jobs keep their nodes
(:mod:`planner.keep`); signatures, packing patterns and the node packer live in
:mod:`planner.signatures`. Every solver limit here is deterministic (LP solves, a fixed number of
dives, a node limit for branch and bound); ``time_limit`` is only a safety net, and plans report
whether it was reached (``Solution.extra["time_limit_hit"]``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import mip

from planner.columns import COLUMNS, MAX_PRICING_ROUNDS, MIN_SIGNATURES, Pricer, first_columns
from planner.keep import keep_equivalent, keep_running, keep_running_jobs, relabel_nodes
from planner.signatures import (BinKey, Candidate, GroupKey, ModelPiece, Packer, Piece, Signature, _extend_to_maximal,
                                maximal_patterns,
                                moved, objective_of, piece_key, quiet_stdout, shares_a_node, signature, stays)
from planner.views import Config, NodeView, freeze_config

__all__ = ["BinKey", "Candidate", "Packer", "Piece", "Signature", "Solution", "keep_equivalent", "keep_running",
           "keep_running_jobs", "maximal_patterns", "moved", "objective_of", "piece_key", "relabel_nodes",
           "shares_a_node", "signature", "solve_compact", "solve_plain"]

log = logging.getLogger(__name__)

#: branch-and-bound nodes per MIP solve: the deterministic limit (wall time is only a safety net)
NODE_LIMIT = 2000



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



def _finish(m: mip.Model, status: mip.OptimizationStatus) -> tuple[str, float | None, float | None]:
    if status == mip.OptimizationStatus.OPTIMAL:
        return "optimal", float(m.objective_value), float(m.objective_bound)
    if status == mip.OptimizationStatus.FEASIBLE:
        return "feasible", float(m.objective_value), float(m.objective_bound)
    bound = m.objective_bound if status == mip.OptimizationStatus.NO_SOLUTION_FOUND else None
    return "none", None, (float(bound) if bound is not None else None)


def solve_plain(cands: Sequence[Candidate], weights: Mapping[str, float], capacity: Mapping[str, int], *,
                solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                node_limit: int = NODE_LIMIT) -> Solution:
    """Eq. 11-13 with one binary per candidate config (the reference formulation); branch and bound
    stops after ``node_limit`` nodes (deterministic), ``time_limit`` is a safety net."""
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
    status = m.optimize(max_seconds=time_limit, max_nodes=node_limit) if cands else mip.OptimizationStatus.OPTIMAL
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
    elapsed = time.perf_counter() - t0
    return Solution(assignments, obj, bound, relative_gap(obj, bound), state, elapsed,
                    m.num_cols, m.num_int, m.num_rows, "plain", solver,
                    extra={"time_limit_hit": elapsed >= time_limit})





def solve_compact(cands: Sequence[Candidate], weights: Mapping[str, float], nodes: Sequence[NodeView], *,
                  solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                  current: Mapping[str, Config] | None = None, lp_rounding: bool = True,
                  dives: int = 4, node_limit: int = NODE_LIMIT, pin: frozenset[str] = frozenset(),
                  columns: int = COLUMNS) -> Solution:
    """Eq. 11-13 over node-class signatures with exact packing patterns (see module docstring).

    With ``lp_rounding`` the LP relaxation is solved first and rounded (jobs by LP value, then the
    rest greedily); when the rounded plan is within ``gap`` of the LP bound that is a proof of the
    gap and no branch and bound runs; otherwise up to ``dives`` LP dives (fix the most decided
    fractional choices to 1, re-solve the LP, round again) and, failing those, the MIP, warm-started
    from the best plan found (at most ``node_limit`` nodes). The gap reported is always against a
    proven bound. ``pin``: running jobs whose current signature may only be realised on the nodes they
    hold (an equivalent placement elsewhere would be a restart for nothing). Every limit but ``time_limit`` (a safety net, reported as ``time_limit_hit``) is
    deterministic, so the same inputs give the same plan on any machine load.
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
    held = {k: freeze_config(current[k[0]]) for k in keys
            if k[0] in pin and stays(k[0], k[1], current, by_name)}
    pinned = {k for k in keys if shares_a_node(k[1])} | set(held)

    def pin_config(k: tuple[str, Signature]) -> Config:
        return held.get(k, best[k].config)

    pinned_nodes = {n for k in pinned for n in pin_config(k)}
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
                              for n, g in sorted(pin_config(k).items()))
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

    # each (job, signature)'s rows: its job's eq. 12 row (key = job id) and, per piece, the eq. 13 rows of
    # the eligible sets holding it (one var may appear in several pieces of one row: coefficients summed)
    touch: dict[tuple[str, Signature], dict[object, float]] = {}
    for k in keys:
        rows: dict[object, float] = defaultdict(float)
        rows[k[0]] = 1.0
        for (pk, g), cnt in Counter(pieces[k]).items():
            for scope in _scopes(pk):
                rows[(scope, g)] += cnt
        touch[k] = rows
    gain_of = {k: weights[k[0]] * best[k].gain for k in keys}
    if len(keys) < MIN_SIGNATURES:  # a small model: every column at once costs less than pricing rounds
        columns = 0
    start_cols = list(keys) if not (columns and lp_rounding) else first_columns(keys, gain_of, columns, current, pinned)

    m = _model(solver, gap, threads)
    zs = {(grp, p): m.add_var(var_type=mip.INTEGER, lb=0, ub=len(groups[grp]))
          for grp, ps in patterns.items() for p in ps}
    xs = {k: m.add_var(var_type=mip.BINARY, obj=gain_of[k]) for k in start_cols}
    # eq. 13 as a transportation problem: pieces of a size may use the slots of that size in their
    # eligible groups. The eligible sets (a pinned node, a (type, class, free) family, a class) are
    # laminar, so one constraint per set and size is exact: the pieces eligible only inside it use at
    # most its slots. Every row any signature touches exists from the start (its dual prices the columns
    # not yet in the model).
    uses: dict[object, list[tuple[float, mip.Var]]] = defaultdict(list)
    for k in keys:
        for row in touch[k]:
            uses.setdefault(row, [])
    for k, x in xs.items():
        for row, cnt in touch[k].items():
            uses[row].append((cnt, x))

    def slots(grp: GroupKey, g: int) -> list[tuple[int, mip.Var]]:
        return [(p.count(g), zs[(grp, p)]) for p in patterns.get(grp, ()) if g in p]

    def at_most(used: Sequence[tuple[float, mip.Var]], caps: Sequence[tuple[float, mip.Var]],
                rhs: float) -> mip.Constr | None:
        coef: dict[int, float] = defaultdict(float)  # one var may appear in several pieces: sum them
        var: dict[int, mip.Var] = {}
        for sign, terms in ((1.0, used), (-1.0, caps)):
            for c, v in terms:
                coef[v.idx] += sign * c
                var[v.idx] = v
        if not coef:
            return None  # no slot of this size anywhere and no column in the model yet: its columns never fit
        return m.add_constr(mip.LinExpr(variables=[var[i] for i in coef], coeffs=list(coef.values())) <= rhs)

    rows_of: dict[object, mip.Constr] = {}
    for row, used in uses.items():
        if isinstance(row, str):
            made = at_most(used, [], 1)  # eq. 12
        else:  # eq. 13
            scope, g = row
            made = at_most(used, [s for grp in eligible(scope) for s in slots(grp, g)], 0)
        if made is not None:
            rows_of[row] = made
    for grp, ps in patterns.items():
        at_most([(1, zs[(grp, p)]) for p in ps], [], len(groups[grp]))

    def add_column(k: tuple[str, Signature]) -> None:
        rows = touch[k]
        if any(r not in rows_of for r in rows):
            return  # a piece with no slot anywhere: the column can never be chosen
        xs[k] = m.add_var(var_type=mip.BINARY, obj=gain_of[k],
                          column=mip.Column([rows_of[r] for r in rows], list(rows.values())))

    extra: dict[str, object] = {"signatures": len(keys), "patterns": len(zs), "groups": len(groups),
                                "pinned": len(pinned)}

    def result(assign: dict[str, Config | None], state: str, obj: float | None, bound: float | None,
               method: str) -> Solution:
        for j in jobs:
            assign.setdefault(j, None)
        if current:
            assign = keep_running_jobs(assign, nodes, current)
        extra["method"] = method
        n_vars, n_int, n_rows = m.num_cols, m.num_int, m.num_rows
        elapsed = time.perf_counter() - t0
        extra["time_limit_hit"] = elapsed >= time_limit
        return Solution(assign, obj, bound, relative_gap(obj, bound), state, elapsed,
                        n_vars, n_int, n_rows, "compact", solver, extra=extra)

    def take_mip() -> tuple[dict[str, Config | None], float]:
        chosen = {j: s for (j, s), x in xs.items() if x.x is not None and x.x >= 0.5}
        pattern_use = {gp: int(round(z.x or 0.0)) for gp, z in zs.items()}
        return _realise(chosen, best, nodes, groups, pattern_use, current, pieces, eligible), float(m.objective_value)

    incumbent: dict[str, Config | None] | None = None
    value = 0.0
    lp_bound: float | None = None
    if lp_rounding:
        with quiet_stdout(solver == "CBC"):
            status = m.optimize(relax=True, max_seconds=time_limit)
            pricer: Pricer | None = None
            if columns:  # price the signatures left out against the duals until none would enter
                for rounds in range(MAX_PRICING_ROUNDS):
                    if status != mip.OptimizationStatus.OPTIMAL:
                        break
                    if pricer is None:
                        pricer = Pricer(keys, touch, gain_of)
                        for k in xs:
                            pricer.add(k)
                    enter = pricer.enter({r: float(c.pi or 0.0) for r, c in rows_of.items()}, columns)
                    extra["pricing_rounds"] = rounds + 1
                    if not enter:
                        break
                    for k in enter:
                        add_column(k)
                        pricer.add(k)
                    status = m.optimize(relax=True, max_seconds=time_limit)
                else:
                    # the LP optimum is the restricted model's only: no LP bound, branch and bound over every column
                    extra["pricing_stopped"] = True
        extra["columns"] = len(xs)
        if status == mip.OptimizationStatus.OPTIMAL and not extra.get("pricing_stopped"):
            lp_bound = float(m.objective_value)
            tolerance = gap * abs(lp_bound) + 1e-9
            xval = {k: float(xs[k].x) if k in xs and xs[k].x is not None else 0.0 for k in keys}
            incumbent, value = _round(keys, best, xval, weights, nodes, current, held)
            extra["lp_bound"] = lp_bound
            if lp_bound - value <= tolerance:
                return result(incumbent, "optimal", value, lp_bound, "lp-rounding")
            # LP dive: fix the most decided fractional choices (one per job) to 1, re-solve the LP,
            # round again; the root LP bound keeps certifying the gap
            fixed: list[mip.Var] = []
            for dive in range(dives):
                frac = sorted((k for k in keys if 1e-6 < xval[k] < 1 - 1e-6), key=lambda k: -xval[k])
                if not frac:
                    break
                picked: set[str] = set()
                for k in frac[: max(1, len(frac) // 3)]:
                    if k[0] not in picked:
                        picked.add(k[0])
                        xs[k].lb = 1.0
                        fixed.append(xs[k])
                with quiet_stdout(solver == "CBC"):
                    status = m.optimize(relax=True, max_seconds=time_limit)
                if status != mip.OptimizationStatus.OPTIMAL:
                    break
                xval = {k: float(xs[k].x) if k in xs and xs[k].x is not None else 0.0 for k in keys}
                dived, dived_value = _round(keys, best, xval, weights, nodes, current, held)
                extra["dives"] = dive + 1
                if dived_value > value:
                    incumbent, value = dived, dived_value
                if lp_bound - value <= tolerance:
                    break
            for v in fixed:
                v.lb = 0.0
            if lp_bound - value <= tolerance:
                return result(incumbent, "optimal", value, lp_bound, "lp-dive")
    if lp_bound is None:  # nothing certifies branch and bound over some columns: every column from the start
        for k in keys:
            if k not in xs:
                add_column(k)
    if incumbent is not None:
        for j, cfg in incumbent.items():  # the rounded plan's signatures as columns, for the MIP start
            if cfg and (j, signature(cfg, by_name)) not in xs:
                add_column((j, signature(cfg, by_name)))
        _warm_start(m, incumbent, by_name, xs, zs, sizes, group_of)
    status = m.optimize(max_seconds=time_limit, max_nodes=node_limit)
    state, obj, bound = _finish(m, status)
    if len(xs) < len(keys) and not (state != "none" and obj is not None and lp_bound is not None
                                    and lp_bound - obj <= gap * abs(lp_bound) + 1e-9):
        # branch and bound over the priced columns bounds those only; unless the full LP bound certifies
        # its plan, again over every column (columns the LP did not price in may serve an integer plan)
        if state != "none" and obj is not None and obj > value:
            incumbent, value = take_mip()
        for k in keys:
            if k not in xs:
                add_column(k)
        if incumbent is not None:
            _warm_start(m, incumbent, by_name, xs, zs, sizes, group_of)
        status = m.optimize(max_seconds=time_limit, max_nodes=node_limit)
        state, obj, bound = _finish(m, status)
    elif len(xs) < len(keys) and bound is not None:
        bound = lp_bound  # the full LP bound, not the restricted model's
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
           nodes: Sequence[NodeView], current: Mapping[str, Config],
           held: Mapping[tuple[str, Signature], Config]) -> tuple[dict[str, Config | None], float]:
    """Round an LP solution: (job, signature) pairs by LP value (then weighted gain) placed on real
    nodes while they fit (a ``held`` pair only on its own nodes); then every job still out tries its
    signatures by weighted gain. Of equally
    good roundings the one moving the fewest running jobs wins (the solution is re-mapped once at the
    end, :func:`keep_running_jobs`)."""
    by_name = {n.name: n for n in nodes}

    def prefer(j: str, sig: Signature) -> Config | None:
        if stays(j, sig, current, by_name):
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
    stay = [k for k in keys if stays(k[0], k[1], current, by_name)]  # warm start: running jobs where they are
    for order in (ones + fracs + by_gain, ones + by_weight, stay + ones + by_weight):
        packer = Packer(nodes)
        out: dict[str, Config | None] = {}
        value = 0.0
        for k in order:
            if k[0] in out:
                continue
            cfg = packer.place(k[1], prefer(*k), only=k in held)
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
    stay = sorted(j for j in chosen if stays(j, chosen[j], current, by_name))
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
