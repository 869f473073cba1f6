"""GPU-type constraints in simulation: a job's server classes -> the nodes it may be placed on.

Data flow: :attr:`hops_slurm.sim.workload.JobSpec.classes` (an imported trace's ``gpu_spec``, as a Slurm
``--constraint=A|B`` would ask) + the cluster file's server classes (each kind's first feature) ->
:func:`confine` sets :attr:`planner.views.JobView.nodes` in the simulated backend's job views, the field
the live engine sets for a job confined to its partitions; every policy plans within it (planner.eligible).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from hops_slurm.sim.cluster_spec import ClusterSpec
from planner.views import JobView


def allowed_nodes(cluster: ClusterSpec, classes: Sequence[str]) -> frozenset[str]:
    """The nodes of ``cluster`` whose server class (first feature, else GPU type) is one of ``classes``."""
    wanted = set(classes)
    return frozenset(name for name, kind in cluster.nodes() if kind.visible_class in wanted)


def confine(views: Sequence[JobView], classes_of: Mapping[str, tuple[str, ...] | None],
            cluster: ClusterSpec) -> tuple[JobView, ...]:
    """``views`` with ``nodes`` set for each job whose spec names classes; the others unchanged."""
    memo: dict[tuple[str, ...], frozenset[str]] = {}
    out = []
    for v in views:
        classes = classes_of.get(v.job_id)
        if classes is None:
            out.append(v)
            continue
        if classes not in memo:
            memo[classes] = allowed_nodes(cluster, classes)
        out.append(replace(v, nodes=memo[classes]))
    return tuple(out)


def outside(placed: Mapping[str, Mapping[str, int]], views: Mapping[str, JobView]) -> str | None:
    """Why a plan breaks a job's allowed nodes (the first such job), or None: a policy that ignores
    :attr:`JobView.nodes` must not run a constrained job where Slurm would never start it."""
    for job_id, config in placed.items():
        view = views.get(job_id)
        if view is not None and view.nodes is not None:
            bad = sorted(n for n, g in config.items() if g > 0 and n not in view.nodes)
            if bad:
                return (f"plan puts job {job_id} on {bad[0]}, outside the nodes its GPU-type constraint allows "
                        "(this policy ignores allowed nodes)")
    return None
