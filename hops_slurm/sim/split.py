"""Slurm's split of a per-job GPU count, for the fast simulator: a placement Slurm would not split as planned
is not made.

Where it sits: :meth:`hops_slurm.sim.sim_backend.SimBackend.apply`, between a plan's check and its placements.
The live enactor asks for an uneven config ``{node: k}`` as one per-job GPU count on the planned nodes, which
Slurm 22.05 splits greedily in node order over the GPUs free at that moment; it places such a config only
when that split is the planned one (:func:`hops_slurm.slurm.placement.realisable`) and refuses it otherwise:
the job stays pending until the next planning (:meth:`hops_slurm.slurm.enact.Enactor.apply`). The engine
simulation meets the rule through the enactor itself; this module gives the fast path the same rule, with
the free GPUs counted as the enactor counts them: the GPUs of the jobs this plan preempts are free, those of
the running jobs it keeps in place and of the notices of earlier preemptions are not, and each placement
of the plan, in the plan's order, takes its GPUs from the ones after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from hops_slurm.slurm.placement import realisable
from planner.views import Config


def splittable(placed: Mapping[str, Config], current: Mapping[str, tuple[Config, bool]], draining: Mapping[str, int],
               capacity: Mapping[str, int], order: Mapping[str, int], *, fragment: bool) -> dict[str, Config]:
    """The placements of ``placed`` (job -> planned config, in the plan's order) that Slurm splits as planned
    (the others are refused, as the enactor refuses them). ``current``: job -> its config now and whether it
    runs there (else it waits for those GPUs); a placement equal to it is kept as it is. A round plan
    preempts the running jobs it does not keep (their GPUs count free), a fragment plan keeps them all;
    ``draining``: GPUs per node that notices still hold; ``order``: node -> its position in Slurm's node order."""
    busy = dict(draining)
    for job_id, (config, running) in current.items():
        if running and (fragment or dict(placed.get(job_id) or {}) == dict(config)):
            for node, g in config.items():
                busy[node] = busy.get(node, 0) + g
    free = {n: max(0, c - busy.get(n, 0)) for n, c in capacity.items()}
    nodes = sorted(capacity, key=order.__getitem__)
    out: dict[str, Config] = {}
    for job_id, config in placed.items():
        kept = job_id in current and dict(current[job_id][0]) == dict(config)
        if not kept and not realisable(config, free, nodes):
            continue  # Slurm would take more GPUs of the first nodes than planned: refused, it waits
        out[job_id] = config
        if not kept:
            for node, g in config.items():
                free[node] -= g
    return out


__all__ = ["splittable"]
