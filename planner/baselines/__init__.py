"""The baseline policies the simulator runs Hops against, by name.

Data flow: the simulator (``hops_slurm.sim``) asks :func:`make_policy` for a policy by name and calls
its ``plan`` each round (and for fragment plans where the policy supports them), exactly as it calls
the Hops planner; each policy returns node-exact placements (:class:`planner.views.Plan`).

Names (:data:`POLICY_NAMES`):
- ``gavel``: Gavel's heterogeneity-aware max-min fairness LP and round mechanism, rigid median request.
- ``gavel-lr``: the same, weighted by the Hops latency-ratio priority (how the Hops paper ran Gavel).
- ``sia``: Sia's goodput^p ILP over its own (type, nodes, GPUs) config space within the job's requests.
- ``sia-lr``: Sia with configs per requirement and LR priority weights (how the Hops paper ran Sia).
- ``themis``: finish-time fairness with 10-minute leases and the partial-allocation auction, f = 0.8.
- ``slurm-backfill``: Slurm's status quo — age priority, EASY backfill, rigid largest request, no
  preemption, type-blind placement.
"""

from __future__ import annotations

from collections.abc import Callable

from hops_slurm.errors import HopsError
from planner.baselines.gavel import GavelPolicy, max_min_fairness_allocation
from planner.baselines.sia import SiaPolicy, sia_config_space
from planner.baselines.slurm_backfill import SlurmBackfillPolicy
from planner.baselines.themis import ThemisPolicy
from planner.views import Policy

__all__ = [
    "POLICY_NAMES",
    "GavelPolicy",
    "SiaPolicy",
    "SlurmBackfillPolicy",
    "ThemisPolicy",
    "UnknownPolicyError",
    "make_policy",
    "max_min_fairness_allocation",
    "sia_config_space",
]


class UnknownPolicyError(HopsError):
    """A policy name or parameter that :func:`make_policy` does not know."""


_FACTORIES: dict[str, Callable[..., Policy]] = {
    "gavel": lambda **p: GavelPolicy(**p),
    "gavel-lr": lambda **p: GavelPolicy(lr_weighted=True, name="gavel-lr", **p),
    "sia": lambda **p: SiaPolicy(**p),
    "sia-lr": lambda **p: SiaPolicy(per_requirement=True, lr_weighted=True, name="sia-lr", **p),
    "themis": lambda **p: ThemisPolicy(**p),
    "slurm-backfill": lambda **p: SlurmBackfillPolicy(**p),
}

#: Every baseline name :func:`make_policy` accepts.
POLICY_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def make_policy(name: str, **params: object) -> Policy:
    """A fresh policy (with empty state) for ``name``; ``params`` override its documented defaults."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise UnknownPolicyError(f"unknown baseline policy {name!r}; choose one of: {', '.join(POLICY_NAMES)}") from None
    try:
        return factory(**params)
    except TypeError as exc:
        raise UnknownPolicyError(f"policy {name!r}: bad parameters {sorted(params)} ({exc})") from None
