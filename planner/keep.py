"""Running jobs keep their nodes: the mapping applied to a finished plan (docs/design.md: "a job
whose config is unchanged keeps running").

Last step of a round plan, after the ILP (:mod:`planner.ilp`) or a fallback: the chosen signatures
are mapped to concrete nodes so that every running job whose signature is unchanged (an equivalent
config: same classes and GPU counts) stays where it runs whenever the others can be packed around
it. Signatures, hence throughput and the objective, never change here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import mip

from planner.signatures import BinKey, Packer, moved, piece_key, quiet_stdout, signature, stays
from planner.views import Config, NodeView, freeze_config

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
    held = {j for j in chosen if stays(j, chosen[j], current, by_name)}
    if all(dict(assignments[j] or {}) == dict(current[j]) for j in held):
        return dict(assignments)
    size = {j: (-sum(g for _, g in chosen[j]), -len(chosen[j]), j) for j in chosen}
    rest_order = sorted(chosen, key=size.__getitem__)

    def attempt(held: set[str], originals_first: bool) -> tuple[dict[str, Config | None], str | None]:
        packer = Packer(nodes)
        out: dict[str, Config | None] = {j: None for j, cfg in assignments.items() if not cfg}
        for j in sorted(held):
            out[j] = packer.place(chosen[j], freeze_config(current[j]))
        later = []
        for j in (j for j in rest_order if j not in held):
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

    while held:
        taken: set[str] = set()
        for originals_first in (True, False):
            out, failed = attempt(held, originals_first)
            if failed is None:
                return out
            taken |= set(assignments[failed] or {})
        blockers = {s for s in held if taken & set(current[s])}
        if not blockers:
            return None
        held -= blockers
    return None



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
    with quiet_stdout(True):
        status = m.optimize(max_seconds=60.0, max_nodes=1000)  # an LP in effect: the matching polytope is integral
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

