"""From the compact model's numbers back to nodes: LP rounding, the MIP start, and the realisation of
chosen signatures on concrete nodes.

Used by :class:`planner.compact.CompactSolve` after each LP or MIP solve. The model (see
:mod:`planner.ilp`'s docstring) places pieces in laminar eligible sets of node groups
(:func:`scopes`, :class:`Eligible`); :func:`round_lp` turns an LP solution into a plan that fits,
:func:`warm_start` hands such a plan to the solver, :func:`realise` maps a MIP's chosen signatures and
pattern counts onto node names. Pure: nodes, configs and solver variables in, configs out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from operator import itemgetter

import mip
import numpy as np

from planner.signatures import (Candidate, GroupKey, ModelPiece, Packer, Signature, _extend_to_maximal, moved,
                                signature, stays)
from planner.views import Config, NodeView, freeze_config


def scopes(pk: GroupKey) -> list[GroupKey]:
    """The eligible sets containing a piece's own, innermost first: its pinned node, its (type,
    class, free) family, its class (a single-node piece's key is its class: free 0)."""
    t, c, f, pin = pk
    out = [pk]
    if pin:
        out.append((t, c, f, ""))
    if f:
        out.append((t, c, 0, ""))
    return out


class Eligible:
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


def round_lp(keys: Sequence[tuple[str, Signature]], best: Mapping[tuple[str, Signature], Candidate],
             xval: Mapping[tuple[str, Signature], float] | Sequence[float], weights: Mapping[str, float],
             nodes: Sequence[NodeView], current: Mapping[str, Config],
             held: Mapping[tuple[str, Signature], Config],
             score: Sequence[float] | None = None) -> tuple[dict[str, Config | None], float]:
    """Round an LP solution: (job, signature) pairs by LP value (then weighted gain) placed on real
    nodes while they fit (a ``held`` pair only on its own nodes); then every job still out tries its
    signatures by weighted gain. Of equally
    good roundings the one moving the fewest running jobs wins (the solution is re-mapped once at the
    end, :func:`keep_running_jobs`). ``xval`` per pair, or a list in ``keys`` order; ``score``: each
    pair's weighted gain in ``keys`` order, when the caller has it (orders are worked out on positions in
    ``keys``: a pair is hashed once, not once per comparison)."""
    by_name = {n.name: n for n in nodes}
    # where a running job stays (:func:`stays`, worked out once per job) and each pair's weighted gain
    here: dict[str, tuple[Signature, Config]] = {j: (signature(cur, by_name), freeze_config(cur))
                                                 for j, cur in current.items()
                                                 if cur and all(n in by_name for n in cur)}
    xs = [xval[k] for k in keys] if isinstance(xval, Mapping) else xval
    # each pair's candidate: best's own order when it is keys' (the compact solve's), else looked up
    same = len(best) == len(keys) and all(a is b for a, b in zip(best, keys))
    cand = list(best.values()) if same else [best[k] for k in keys]
    if score is None:
        score = [weights[k[0]] * c.gain for k, c in zip(keys, cand)]
    neg_score, neg_x = (-np.asarray(score, dtype=float)).tolist(), (-np.asarray(xs, dtype=float)).tolist()
    job_of = list(map(itemgetter(0), keys))

    def prefer(i: int) -> Config | None:
        cur = here.get(job_of[i])
        return cur[1] if cur is not None and cur[0] == keys[i][1] else cand[i].config

    # integral LP choices first, biggest first (first-fit-decreasing keeps whole nodes for spanning
    # configs); then either the fractional ones by LP value and everything by weighted gain, or every
    # job by weight with its signatures by LP value. The better of the two is kept.
    def size(i: int) -> tuple[int, int]:
        return (-len(keys[i][1]), -sum(g for _, g in keys[i][1]))

    n = len(keys)
    xs_a = np.array(xs, dtype=float)
    ones = sorted(np.nonzero(xs_a > 1 - 1e-6)[0].tolist(), key=lambda i: (*size(i), job_of[i]))
    fracs = sorted(np.nonzero((xs_a > 1e-6) & (xs_a <= 1 - 1e-6))[0].tolist(),
                   key=lambda i: (neg_x[i], neg_score[i], job_of[i]))
    # every pair by (-score, job id, position); every job by (-weight, job id) with its pairs by (-xval,
    # -score, position): stable sorts on numbers (a job's rank in each job order stands for its id)
    jobs = list(dict.fromkeys(job_of))
    number = {j: k for k, j in enumerate(jobs)}  # each pair's job as a number, worked out once per pair
    job_no = np.fromiter(map(number.__getitem__, job_of), dtype=np.int64, count=n)
    id_rank, heavy_rank = np.empty(len(jobs), dtype=np.int64), np.empty(len(jobs), dtype=np.int64)
    id_rank[[number[j] for j in sorted(jobs)]] = np.arange(len(jobs))
    heavy_rank[[number[j] for j in sorted(jobs, key=lambda j: (-weights[j], j))]] = np.arange(len(jobs))
    neg_score_a = np.array(neg_score, dtype=float)
    by_gain = np.lexsort((id_rank[job_no], neg_score_a))
    heavy = heavy_rank[job_no]
    by_weight_a = np.lexsort((neg_score_a, -xs_a, heavy))
    # by_weight holds each job's pairs together: one block per job (once the job is placed, the rest of its
    # block would only be skipped one by one)
    cuts = np.nonzero(np.diff(heavy[by_weight_a]))[0] + 1
    by_weight = [block.tolist() for block in np.split(by_weight_a, cuts)] if n else []
    best_out: dict[str, Config | None] = {}
    best_value = -1.0
    best_moved = 0
    # warm start: running jobs where they are
    stay = [i for i in range(n) if job_of[i] in here and here[job_of[i]][0] == keys[i][1]] if here else []
    # with no running job where it is, the warm start is the second order again (the same rounding)
    # each order: pairs one by one (then, for the first, every pair by gain), then per-job blocks of pairs
    orders: list[tuple[list[int], np.ndarray | None, list[list[int]]]] = [(ones + fracs, by_gain, []),
                                                                          (ones, None, by_weight)]
    if stay:
        orders.append((stay + ones, None, by_weight))
    only_held = bool(held)
    for flat, then, blocks in orders:
        packer = Packer(nodes)
        out: dict[str, Config | None] = {}
        value = 0.0
        for part in (flat, then):
            if isinstance(part, np.ndarray):  # the pairs of jobs placed by now would only be skipped one by one
                placed = np.zeros(len(jobs), dtype=bool)
                placed[[number[j] for j in out]] = True
                part = part[~placed[job_no[part]]].tolist()
            for i in part or ():
                j, sig = keys[i]
                if j in out or packer.cannot(sig):  # (its preferred config, of that signature, cannot either)
                    continue
                cfg = packer.place(sig, prefer(i), only=only_held and keys[i] in held)
                if cfg is not None:
                    out[j] = cfg
                    value += score[i]
        for block in blocks:
            j = job_of[block[0]]
            if j in out:
                continue
            for i in block:
                sig = keys[i][1]
                if packer.cannot(sig):
                    continue
                cfg = packer.place(sig, prefer(i), only=only_held and keys[i] in held)
                if cfg is not None:
                    out[j] = cfg
                    value += score[i]
                    break
        n_moved = moved(out, current)
        tie = abs(value - best_value) <= 1e-9 * max(1.0, abs(value))
        if (value > best_value and not tie) or (tie and n_moved < best_moved):
            best_out, best_value, best_moved = out, value, n_moved
    return best_out, best_value


def warm_start(m: mip.Model, assign: Mapping[str, Config | None], by_name: Mapping[str, NodeView],
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


def realise(chosen: Mapping[str, Signature], best: Mapping[tuple[str, Signature], Candidate],
             nodes: Sequence[NodeView], groups: Mapping[GroupKey, list[str]],
             pattern_use: Mapping[tuple[GroupKey, tuple[int, ...]], int],
             current: Mapping[str, Config], pieces: Mapping[tuple[str, Signature], tuple[ModelPiece, ...]],
             eligible: Eligible) -> dict[str, Config | None]:
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
    return realise_patterns({j: pieces[(j, sig)] for j, sig in chosen.items()}, groups, pattern_use, eligible)


def realise_patterns(chosen: Mapping[str, tuple[ModelPiece, ...]], groups: Mapping[GroupKey, list[str]],
                      pattern_use: Mapping[tuple[GroupKey, tuple[int, ...]], int],
                      eligible: Eligible) -> dict[str, Config | None]:
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
