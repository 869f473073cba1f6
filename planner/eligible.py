"""Where a job may run: the nodes a job is allowed (``JobView.nodes``), kept apart for the whole planning.

Where it sits: the live engine sets :attr:`planner.views.JobView.nodes` for a job that may use only some of
the cluster's nodes (a job of one Hops partition where several Hops partitions have different nodes, A100
nodes beside older cards: :mod:`hops_slurm.slurm.scope`); None, the default and what the simulator gives,
is every node. Two things keep a job on its nodes:

* :func:`confine`: the cluster as one job sees it, its allowed nodes only; configuration generation
  (:mod:`planner.configs`), the unservable verdict, exploration and the backfill reservation of
  :mod:`planner.hops` look at a job's configs through it, so no candidate names another node;
* :func:`eligibility_classes`: before the candidates, server classes are split wherever the jobs of the
  planning are allowed different nodes, so the compact ILP, the greedy fallback, the leftover fill and
  the keeping of running jobs (which realise a candidate on any node of its class) never swap a node a
  job may use for one it may not.

With no job restricted both return the cluster unchanged. Pure: views in, views out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from planner.views import ClusterView, JobView

#: separator between the declared class and the group of nodes allowed to the same jobs
SEP = "~nodes"


def confine(cluster: ClusterView, job: JobView) -> ClusterView:
    """``cluster`` with only the nodes ``job`` may use (the view itself when it may use every node);
    remembered per set of nodes on the view."""
    allowed = job.nodes
    if allowed is None:
        return cluster
    memo: dict[frozenset[str], ClusterView] = cluster.__dict__.setdefault("_confined", {})
    got = memo.get(allowed)
    if got is None:
        kept = tuple(n for n in cluster.nodes if n.name in allowed)
        got = memo[allowed] = cluster if len(kept) == len(cluster.nodes) else ClusterView(kept)
    return got


def eligibility_classes(cluster: ClusterView, jobs: Sequence[JobView]) -> ClusterView:
    """``cluster`` with each server class split by which of the jobs' node sets hold each node (see the
    module docstring); unchanged when every node is in the same ones."""
    sets = list(dict.fromkeys(j.nodes for j in jobs if j.nodes is not None))
    if not sets:
        return cluster
    keys = {n.name: tuple(k for k, s in enumerate(sets) if n.name in s) for n in cluster.nodes}
    groups = list(dict.fromkeys(keys.values()))
    if len(groups) == 1:
        return cluster
    number = {g: i for i, g in enumerate(groups)}
    return ClusterView(tuple(replace(n, server_class=f"{n.server_class}{SEP}{number[keys[n.name]]}")
                             for n in cluster.nodes))


__all__ = ["SEP", "confine", "eligibility_classes"]
