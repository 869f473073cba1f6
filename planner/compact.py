"""One solve of the compact placement ILP as named steps: build, solve (the LP with its pricing rounds),
round (LP rounding and dives), branch (branch and bound, only when rounding falls short).

Called through :func:`planner.ilp.solve_compact` (the formulation is described in that module's
docstring). In: the window jobs' candidates, the eq. 11 weights, the nodes, the running jobs' configs;
out: a :class:`planner.solution.Solution`. Each step can be timed through a caller's
:class:`StageTimer` (the planner stays pure: no clock is read here for the steps, only the solve time
the :class:`Solution` has always reported). Helpers that map numbers back to nodes live in
:mod:`planner.realise`; column generation in :mod:`planner.columns`.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from typing import Protocol

import mip
import numpy as np

from planner.columns import COLUMNS, MAX_PRICING_ROUNDS, MIN_SIGNATURES, Pricer, first_positions, job_numbers
from planner.keep import keep_running_jobs
from planner.lp_columns import add_binary_columns, column_values, solve_relaxation
from planner.realise import Eligible, realise, round_lp, scopes, warm_start
from planner.signatures import (Candidate, GroupKey, ModelPiece, Signature, maximal_patterns, quiet_stdout,
                                shares_a_node, signature, signature_on, stays)
from planner.solution import NODE_LIMIT, Solution, finish, new_model, pick_solver, relative_gap
from planner.views import Config, NodeView, freeze_config

#: the named steps of one compact solve, in the order they run (``branch`` only when rounding falls short)
STEPS = ("build", "solve", "round", "branch")

Key = tuple[str, Signature]  # (job id, signature): one column of the model


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the duration (it is switched back on after if it was on).

    A planning (:meth:`planner.hops.HopsPolicy.plan`, and a solve on its own) makes hundreds of thousands of
    small tuples and dicts that live until it ends and form no cycles (reference counting frees them); the
    collector's full passes over them cost a fifth of a 4,096-GPU plan and do not change it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class StageTimer(Protocol):
    """Times a named step (the planner's stage timer, supplied by its caller)."""

    def stage(self, name: str) -> AbstractContextManager[None]: ...


class CompactSolve:
    """The compact model of one planning: its signatures, node groups, patterns, rows and columns, and the
    steps that solve it. ``run`` once; every limit but ``time_limit`` is deterministic."""

    def __init__(self, cands: Sequence[Candidate], weights: Mapping[str, float], nodes: Sequence[NodeView], *,
                 solver: str = "CBC", gap: float = 0.01, time_limit: float = 10.0, threads: int = 1,
                 current: Mapping[str, Config] | None = None, lp_rounding: bool = True, dives: int = 4,
                 node_limit: int = NODE_LIMIT, pin: frozenset[str] = frozenset(), columns: int = COLUMNS,
                 timer: StageTimer | None = None) -> None:
        self.cands, self.weights, self.nodes = cands, weights, nodes
        self.solver, self.gap, self.time_limit, self.threads = solver, gap, time_limit, threads
        self.current: Mapping[str, Config] = current or {}
        self.lp_rounding, self.dives, self.node_limit = lp_rounding, dives, node_limit
        self.pin, self.columns, self.timer = pin, columns, timer
        self.by_name = {n.name: n for n in nodes}
        self.extra: dict[str, object] = {}
        # the LP's best plan so far and its value; the root LP bound (None: nothing certifies)
        self.incumbent: dict[str, Config | None] | None = None
        self.pricer: Pricer | None = None  # column generation's, when it ran (its index: each column's position)
        self.value = 0.0
        self.lp_bound: float | None = None

    def _stage(self, name: str) -> AbstractContextManager[None]:
        return self.timer.stage(name) if self.timer is not None else contextlib.nullcontext()

    def run(self) -> Solution:
        with gc_paused():
            return self._run()

    def _run(self) -> Solution:
        self.t0 = time.perf_counter()
        with self._stage("build"):
            built = self.build()
        if not built:
            return Solution({}, 0.0, 0.0, 0.0, "optimal", time.perf_counter() - self.t0, 0, 0, 0, "compact",
                            pick_solver(self.solver, False))
        if self.lp_rounding:
            with self._stage("solve"):
                status = self.solve_lp()
            self.extra["columns"] = len(self.xs)
            if status == mip.OptimizationStatus.OPTIMAL and not self.extra.get("pricing_stopped"):
                with self._stage("round"):
                    done = self.round()
                if done is not None:
                    return done
        with self._stage("branch"):
            return self.branch()

    # ------------------------------------------------------------------ build
    def build(self) -> bool:
        """Signatures, node groups, patterns, rows and the starting columns; False when there is no column."""
        nodes, by_name, cands = self.nodes, self.by_name, self.cands
        best: dict[Key, Candidate] = {}
        sigs = list(map(attrgetter("sig"), cands))
        if cands and None not in sigs and all(map(is_, map(attrgetter("on"), cands), repeat(nodes))):
            # every candidate carries its signature on these nodes (planner.candidates): when no two name one
            # (job, signature), each is its key's best, in the loop's order (dict and zip run in C)
            best = dict(zip(zip(map(attrgetter("job_id"), cands), sigs), cands))
            if len(best) != len(cands):
                best = {}
        get = best.get
        for c in (cands if not best else ()):
            sig = c.sig
            if sig is None or c.on is not nodes:
                sig = signature_on(c, nodes, by_name)
            key = (c.job_id, sig)
            got = get(key)
            if got is None or c.gain > got.gain:
                best[key] = c
        self.best = best
        self.keys = list(best)
        # each column's job as a number, in the order the keys (and so the candidates) first name the jobs
        self.numbers = job_numbers(self.keys)
        self.jobs = list(self.numbers[0])
        if not self.keys:
            return False
        self._group_nodes()
        self._patterns()
        self._touch()
        self._model()
        self.extra.update({"signatures": len(self.keys), "patterns": len(self.zs), "groups": len(self.groups),
                           "pinned": len(self.pinned)})
        return True

    def _pin_config(self, k: Key) -> Config:
        return self.held.get(k, self.best[k].config)

    def _group_nodes(self) -> None:
        """Groups of interchangeable nodes (type, class, free GPUs); a node that a signature sharing a node
        (see shares_a_node) is pinned to forms a group of its own, keyed by its name."""
        current, by_name = self.current, self.by_name
        self.held: dict[Key, Config] = {k: freeze_config(current[k[0]]) for k in self.keys
                                        if k[0] in self.pin and stays(k[0], k[1], current, by_name)} \
            if self.pin else {}
        # (a single-node signature never shares a node: only multi-node ones are asked)
        self.signatures = list(dict.fromkeys(map(itemgetter(1), self.keys)))  # each once, in keys order
        shares = {sig: shares_a_node(sig) for sig in self.signatures if len(sig) > 1}
        self.pinned = ({k for k in self.keys if len(k[1]) > 1 and shares[k[1]]} if any(shares.values()) else set()) \
            | set(self.held)
        pinned_nodes = {n for k in self.pinned for n in self._pin_config(k)}
        self.group_of: dict[str, GroupKey] = {}
        self.groups: dict[GroupKey, list[str]] = defaultdict(list)
        for n in self.nodes:
            if n.free_gpus > 0:
                self.group_of[n.name] = (n.gpu_type, n.server_class, n.free_gpus,
                                         n.name if n.name in pinned_nodes else "")
                self.groups[self.group_of[n.name]].append(n.name)

    def _patterns(self) -> None:
        """Each column's model pieces and their eq. 13 rows' template (:meth:`touch`), and each group's
        maximal packing patterns of the sizes it may hold. An unpinned column's pieces and template are its
        signature's (worked out once per signature); a pinned column's name its nodes."""
        by_name, pinned = self.by_name, self.pinned
        #: signature -> (its unpinned pieces, their template); pinned column -> (its pieces, their template)
        self.of_signature: dict[Signature, tuple[tuple[ModelPiece, ...], int]] = {}
        self.of_pinned: dict[Key, tuple[tuple[ModelPiece, ...], int]] = {}
        of_pieces: dict[tuple[ModelPiece, ...], int] = {}  # a pinned tuple of pieces -> its template
        distinct: list[tuple[ModelPiece, ...]] = []  # each tuple of pieces once, in the order columns first hold it
        self.template_of: list[int] = []  # per column, in keys order
        of_signature = self.of_signature
        if not pinned:  # every column's template is its signature's: numbered in the order keys first hold them
            for sig in self.signatures:
                of_signature[sig] = (tuple(((t_, c, f, ""), g) for (t_, c, f), g in sig), len(distinct))
                distinct.append(of_signature[sig][0])
            number = {sig: hit[1] for sig, hit in of_signature.items()}
            self.template_of = list(map(number.__getitem__, map(itemgetter(1), self.keys)))
        for k in (self.keys if pinned else ()):
            if pinned and k in pinned:
                pieces = tuple(((by_name[n].gpu_type, by_name[n].server_class, by_name[n].free_gpus, n), g)
                               for n, g in sorted(self._pin_config(k).items()))
                t = of_pieces.get(pieces)
                if t is None:  # (pieces naming a node never equal a signature's, which name none)
                    t = of_pieces[pieces] = len(distinct)
                    distinct.append(pieces)
                hit = self.of_pinned[k] = (pieces, t)
            else:
                hit = of_signature.get(k[1])  # type: ignore[assignment]
                if hit is None:
                    hit = of_signature[k[1]] = (tuple(((t_, c, f, ""), g) for (t_, c, f), g in k[1]), len(distinct))
                    distinct.append(hit[0])
            self.template_of.append(hit[1])
        self.eligible = Eligible(self.groups)
        self.sizes: dict[GroupKey, set[int]] = defaultdict(set)
        # each distinct piece once, in the order the columns first hold it (the groups' order in the model)
        for pk, g in dict.fromkeys(piece for pieces in distinct for piece in pieces):
            for grp in self.eligible(pk):
                if g <= grp[2]:
                    self.sizes[grp].add(g)
        self.patterns = {grp: maximal_patterns(grp[2], sorted(ss)) for grp, ss in self.sizes.items()}
        # each template: per piece, the (eligible set, size) rows holding it, summed over the pieces
        self.templates: list[dict[object, float]] = []
        for pieces in distinct:
            made: dict[object, float] = defaultdict(float)
            for (pk, g), cnt in Counter(pieces).items():
                for scope in scopes(pk):
                    made[(scope, g)] += cnt
            self.templates.append(made)

    def pieces_of(self, k: Key) -> tuple[ModelPiece, ...]:
        """A column's model pieces (see :meth:`_patterns`)."""
        return self._of(k)[0]

    def _of(self, k: Key) -> tuple[tuple[ModelPiece, ...], int]:
        return (self.of_pinned.get(k) if self.of_pinned else None) or self.of_signature[k[1]]

    def _touch(self) -> None:
        """Each column's weighted gain; the columns the model starts with."""
        numbered, job = self.numbers
        weight = np.array([self.weights[j] for j in numbered], dtype=float)
        # in keys order: the job's weight times the candidate's gain (the same products, in numpy)
        gain = np.fromiter(map(attrgetter("gain"), self.best.values()), dtype=float, count=len(self.keys))
        self.gains = (weight[job] * gain).tolist()
        if len(self.keys) < MIN_SIGNATURES:  # a small model: every column at once costs less than pricing rounds
            self.columns = 0
        #: the starting columns' positions in keys
        priced = bool(self.columns and self.lp_rounding)
        self.start_at = (list(range(len(self.keys))) if not priced
                         else first_positions(self.keys, self.gains, self.columns, self.current, self.pinned,
                                              self.numbers))
        self.solver = pick_solver(self.solver, priced, len(self.keys))  # ("auto": by size)

    def touch(self, k: Key) -> dict[object, float]:
        """A column's rows and coefficients: its job's eq. 12 row (key = job id) and, per piece, the eq. 13
        rows of the eligible sets holding it (one var may appear in several pieces of one row: summed)."""
        rows: dict[object, float] = {k[0]: 1.0}
        rows.update(self.templates[self._of(k)[1]])
        return rows

    def _model(self) -> None:
        """The solver model: pattern counts z, the starting columns x, every row any column touches.

        Eq. 13 as a transportation problem: pieces of a size may use the slots of that size in their
        eligible groups. The eligible sets (a pinned node, a (type, class, free) family, a class) are
        laminar, so one constraint per set and size is exact: the pieces eligible only inside it use at
        most its slots. Every row any signature touches exists from the start (its dual prices the
        columns not yet in the model)."""
        m = self.m = new_model(self.solver, self.gap, self.threads)
        self.zs = {(grp, p): m.add_var(var_type=mip.INTEGER, lb=0, ub=len(self.groups[grp]))
                   for grp, ps in self.patterns.items() for p in ps}
        keys, gains = self.keys, self.gains
        self.xs: dict[Key, mip.Var] = {}
        self.x_at: dict[Key, int] = {}  # each column in the model: its position in keys
        for i, x in zip(self.start_at, add_binary_columns(m, [(gains[i], (), ()) for i in self.start_at]),
                        strict=True):
            self.xs[keys[i]] = x
            self.x_at[keys[i]] = i
        self._of_template: dict[int, tuple[bool, list[int], list[float]]] = {}
        uses: dict[object, list[tuple[float, mip.Var]]] = defaultdict(list)
        # the rows in the order the columns first touch them: at the first column of each job its eq. 12 row,
        # then at the first column of each template its eq. 13 rows (jobs and templates are numbered in the
        # order of their first columns, so each one's first position is found in numpy, not key by key)
        numbered, job = self.numbers
        job_first = np.unique(job, return_index=True)[1]
        template_first = np.unique(np.asarray(self.template_of, dtype=np.int64), return_index=True)[1]
        at = np.concatenate([job_first, template_first])
        kind = np.concatenate([np.zeros(len(job_first), dtype=np.int64), np.ones(len(template_first), dtype=np.int64)])
        which = np.concatenate([np.arange(len(job_first)), np.arange(len(template_first))])
        jobs = list(numbered)
        for e in np.lexsort((kind, at)).tolist():
            if kind[e]:
                for row in self.templates[int(which[e])]:
                    uses.setdefault(row, [])
            else:
                uses.setdefault(jobs[int(which[e])], [])
        for k, x in self.xs.items():
            for row, cnt in self.touch(k).items():
                uses[row].append((cnt, x))
        self.rows_of: dict[object, mip.Constr] = {}
        for row, used in uses.items():
            if isinstance(row, str):
                made = self._at_most(used, [], 1)  # eq. 12
            else:  # eq. 13
                scope, g = row
                made = self._at_most(used, [s for grp in self.eligible(scope) for s in self._slots(grp, g)], 0)
            if made is not None:
                self.rows_of[row] = made
        for grp, ps in self.patterns.items():
            self._at_most([(1, self.zs[(grp, p)]) for p in ps], [], len(self.groups[grp]))

    def _slots(self, grp: GroupKey, g: int) -> list[tuple[int, mip.Var]]:
        return [(p.count(g), self.zs[(grp, p)]) for p in self.patterns.get(grp, ()) if g in p]

    def _at_most(self, used: Sequence[tuple[float, mip.Var]], caps: Sequence[tuple[float, mip.Var]],
                 rhs: float) -> mip.Constr | None:
        coef: dict[int, float] = defaultdict(float)  # one var may appear in several pieces: sum them
        var: dict[int, mip.Var] = {}
        for sign, terms in ((1.0, used), (-1.0, caps)):
            for c, v in terms:
                coef[v.idx] += sign * c
                var[v.idx] = v
        if not coef:
            return None  # no slot of this size anywhere and no column in the model yet: its columns never fit
        return self.m.add_constr(mip.LinExpr(variables=[var[i] for i in coef], coeffs=list(coef.values())) <= rhs)

    def add_column(self, k: Key) -> None:
        pos = self.__dict__.get("_pos") or self.__dict__.setdefault("_pos", {k: i for i, k in enumerate(self.keys)})
        self.add_columns([pos[k]])

    def add_columns(self, positions: Sequence[int]) -> None:
        """Add the columns at these positions in keys to the model, in order (one batch:
        :func:`planner.lp_columns.add_binary_columns`); a column with a piece that has no slot anywhere is
        left out (it can never be chosen)."""
        rows_of, of_template, keys, gains = self.rows_of, self._of_template, self.keys, self.gains
        specs: list[tuple[float, list[int], list[float]]] = []
        taken: list[int] = []
        template_of = self.template_of
        for i in positions:
            k = keys[i]
            job_row = rows_of.get(k[0])
            t = template_of[i]  # (self._of(k)'s template, by position)
            made = of_template.get(t)
            if made is None:
                made = of_template[t] = self._template_rows(t)
            if job_row is None or not made[0]:
                continue
            specs.append((gains[i], [job_row.idx, *made[1]], [1.0, *made[2]]))
            taken.append(i)
        for i, x in zip(taken, add_binary_columns(self.m, specs), strict=True):
            self.xs[keys[i]] = x
            self.x_at[keys[i]] = i

    def _template_rows(self, t: int) -> tuple[bool, list[int], list[float]]:
        """A template's eq. 13 rows as (all in the model, row indices, coefficients), in :meth:`touch`'s order."""
        rows_of, template = self.rows_of, self.templates[t]
        if any(r not in rows_of for r in template):
            return False, [], []
        return True, [rows_of[r].idx for r in template], list(template.values())

    # ------------------------------------------------------------------ solve
    def solve_lp(self) -> mip.OptimizationStatus:
        """The LP relaxation; with column generation, the signatures left out priced against the duals
        until none would enter."""
        m = self.m
        with quiet_stdout(self.solver == "CBC"):
            status = solve_relaxation(m, self.time_limit)
            if not self.columns:
                return status
            pricer: Pricer | None = None
            for rounds in range(MAX_PRICING_ROUNDS):
                if status != mip.OptimizationStatus.OPTIMAL:
                    break
                if pricer is None:
                    pricer = self.pricer = Pricer.shared(self.keys, self.templates, self.template_of, self.gains,
                                                               self.numbers)
                    pricer.add_at(list(self.x_at.values()))
                enter = pricer.enter_at({r: float(c.pi or 0.0) for r, c in self.rows_of.items()}, self.columns)
                self.extra["pricing_rounds"] = rounds + 1
                if not enter:
                    break
                self.add_columns(enter)
                pricer.add_at(enter)
                status = solve_relaxation(m, self.time_limit)
            else:
                # the LP optimum is the restricted model's only: no LP bound, branch and bound over every column
                self.extra["pricing_stopped"] = True
        return status

    # ------------------------------------------------------------------ round
    def _xval(self) -> list[float]:
        """Each column's LP value, in keys order (0 for the columns outside the model)."""
        at = self.x_at
        xval = [0.0] * len(self.keys)
        values = column_values(self.m)  # (every column's value in one read, when the solver allows it)
        if values is not None:
            for k, x in self.xs.items():
                xval[at[k]] = float(values[x.idx])
            return xval
        for k, x in self.xs.items():
            value = x.x
            if value is not None:
                xval[at[k]] = float(value)
        return xval

    def _round(self, xval: Sequence[float]) -> tuple[dict[str, Config | None], float]:
        return round_lp(self.keys, self.best, xval, self.weights, self.nodes, self.current, self.held, self.gains)

    def round(self) -> Solution | None:
        """Round the LP optimum; when that falls short of the gap, LP dives: fix the most decided fractional
        choices (one per job) to 1, re-solve the LP, round again (the root LP bound keeps certifying the
        gap). The plan when proven within the gap, else None (branch and bound follows)."""
        lp_bound = self.lp_bound = float(self.m.objective_value)
        tolerance = self.gap * abs(lp_bound) + 1e-9
        xval = self._xval()
        self.incumbent, self.value = self._round(xval)
        self.extra["lp_bound"] = lp_bound
        if lp_bound - self.value <= tolerance:
            return self.result(self.incumbent, "optimal", self.value, lp_bound, "lp-rounding")
        fixed: list[mip.Var] = []
        for dive in range(self.dives):
            frac = [self.keys[i] for i in sorted((i for i, v in enumerate(xval) if 1e-6 < v < 1 - 1e-6),
                                                 key=lambda i: -xval[i])]
            if not frac:
                break
            picked: set[str] = set()
            for k in frac[: max(1, len(frac) // 3)]:
                if k[0] not in picked:
                    picked.add(k[0])
                    self.xs[k].lb = 1.0
                    fixed.append(self.xs[k])
            with quiet_stdout(self.solver == "CBC"):
                status = solve_relaxation(self.m, self.time_limit)
            if status != mip.OptimizationStatus.OPTIMAL:
                break
            xval = self._xval()
            dived, dived_value = self._round(xval)
            self.extra["dives"] = dive + 1
            if dived_value > self.value:
                self.incumbent, self.value = dived, dived_value
            if lp_bound - self.value <= tolerance:
                break
        for v in fixed:
            v.lb = 0.0
        if lp_bound - self.value <= tolerance:
            return self.result(self.incumbent, "optimal", self.value, lp_bound, "lp-dive")
        return None

    # ------------------------------------------------------------------ branch
    def _warm_start(self) -> None:
        assert self.incumbent is not None
        warm_start(self.m, self.incumbent, self.by_name, self.xs, self.zs, self.sizes, self.group_of)

    def _certified(self, state: str, obj: float | None) -> bool:
        lp_bound = self.lp_bound
        return (state != "none" and obj is not None and lp_bound is not None
                and lp_bound - obj <= self.gap * abs(lp_bound) + 1e-9)

    def branch(self) -> Solution:
        """Branch and bound, warm-started from the rounded plan; over every column when the priced ones
        are not certified by the full LP bound. The better of its plan and the rounded one is returned."""
        m, keys, xs, lp_bound = self.m, self.keys, self.xs, self.lp_bound
        if lp_bound is None:  # nothing certifies branch and bound over some columns: every column from the start
            self._add_missing()
        if self.incumbent is not None:
            for j, cfg in self.incumbent.items():  # the rounded plan's signatures as columns, for the MIP start
                if cfg and (j, signature(cfg, self.by_name)) not in xs:
                    self.add_column((j, signature(cfg, self.by_name)))
            self._warm_start()
        status = m.optimize(max_seconds=self.time_limit, max_nodes=self.node_limit)
        state, obj, bound = finish(m, status)
        if len(xs) < len(keys) and not self._certified(state, obj):
            # branch and bound over the priced columns bounds those only; unless the full LP bound certifies
            # its plan, again over every column (columns the LP did not price in may serve an integer plan)
            if state != "none" and obj is not None and obj > self.value:
                self.incumbent, self.value = self._take_mip()
            self._add_missing()
            if self.incumbent is not None:
                self._warm_start()
            status = m.optimize(max_seconds=self.time_limit, max_nodes=self.node_limit)
            state, obj, bound = finish(m, status)
        elif len(xs) < len(keys) and bound is not None:
            bound = lp_bound  # the full LP bound, not the restricted model's
        value = self.value
        if self.incumbent is not None and (state == "none" or obj is None or obj <= value):
            # the rounded plan is at least as good as what branch and bound returned; the tighter of the
            # two proven bounds certifies it
            proven = [b for b in (bound, lp_bound) if b is not None]
            tight = min(proven) if proven else None
            ok = state == "optimal" or (tight is not None and tight - value <= self.gap * abs(tight) + 1e-9)
            return self.result(self.incumbent, "optimal" if ok else "feasible", value, tight, "lp-rounding")
        if state == "none":
            return self.result({}, "none", None, bound, "mip")
        assign, obj = self._take_mip()
        return self.result(assign, state, obj, bound, "mip")

    def _add_missing(self) -> None:
        xs = self.xs
        self.add_columns([i for i, k in enumerate(self.keys) if k not in xs])

    def _take_mip(self) -> tuple[dict[str, Config | None], float]:
        chosen = {j: s for (j, s), x in self.xs.items() if x.x is not None and x.x >= 0.5}
        pattern_use = {gp: int(round(z.x or 0.0)) for gp, z in self.zs.items()}
        return (realise(chosen, self.best, self.nodes, self.groups, pattern_use, self.current,
                        {(j, sig): self.pieces_of((j, sig)) for j, sig in chosen.items()},
                        self.eligible), float(self.m.objective_value))

    def result(self, assign: dict[str, Config | None], state: str, obj: float | None, bound: float | None,
               method: str) -> Solution:
        for j in self.jobs:
            assign.setdefault(j, None)
        if self.current:
            assign = keep_running_jobs(assign, self.nodes, self.current)
        extra = self.extra
        extra["method"] = method
        m = self.m
        n_vars, n_int, n_rows = m.num_cols, m.num_int, m.num_rows
        elapsed = time.perf_counter() - self.t0
        extra["time_limit_hit"] = elapsed >= self.time_limit
        return Solution(assign, obj, bound, relative_gap(obj, bound), state, elapsed,
                        n_vars, n_int, n_rows, "compact", self.solver, extra=extra)
