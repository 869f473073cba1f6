"""Every scheduling policy by name: the one factory the daemon, the simulator and the benchmarks use.

Data flow: a name (``hops simulate --policies``, a benchmark's list, or ``"hops"`` with the site's
``[planner]`` parameters in the daemon) -> :func:`make_policy` -> a fresh :class:`planner.views.Policy`
with empty state.

Names (:func:`policy_names`):

- ``hops``: :class:`planner.hops.HopsPolicy` with the given :class:`~planner.params.PlannerParams`
  (the defaults when none are given);
- ``hops-<priority>``: the Hops architecture with another queue priority from
  :mod:`planner.priorities` (``hops-las``, ``hops-sjf``, ``hops-srtf``, ``hops-fifo``, ``hops-ftf``;
  the paper's §4.5 ablation);
- either may carry planner parameters after a colon, in the keys of the site configuration's
  ``[planner]`` section: ``hops:restart_penalty=0.1,sigma=1.2`` (docs/design.md, "Planner parameters");
- the baselines of :mod:`planner.baselines`: ``gavel``, ``gavel-lr``, ``sia``, ``sia-lr``, ``themis``,
  ``slurm-backfill``, ``slurm-multifactor``, ``fifo-greedy``; keyword options override their documented defaults.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.baselines import FifoGreedy, GavelPolicy, SiaPolicy, SlurmBackfillPolicy, SlurmMultifactorPolicy, ThemisPolicy
from planner.errors import PolicyError
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.priorities import PRIORITIES
from planner.views import Policy

BASELINES: dict[str, Callable[..., Policy]] = {
    "gavel": lambda **o: GavelPolicy(**o),
    "gavel-lr": lambda **o: GavelPolicy(lr_weighted=True, name="gavel-lr", **o),
    "sia": lambda **o: SiaPolicy(**o),
    "sia-lr": lambda **o: SiaPolicy(per_requirement=True, lr_weighted=True, name="sia-lr", **o),
    "themis": lambda **o: ThemisPolicy(**o),
    "slurm-backfill": lambda **o: SlurmBackfillPolicy(**o),
    "slurm-multifactor": lambda **o: SlurmMultifactorPolicy(**o),
    "fifo-greedy": lambda **o: FifoGreedy(**o),
}


def policy_names() -> list[str]:
    """Every plain name :func:`make_policy` accepts (``hops`` first; the priority ablations and
    parameter settings not listed)."""
    return ["hops", *BASELINES]


def make_policy(name: str, params: PlannerParams | None = None, **options: object) -> Policy:
    """A fresh policy for ``name`` (see the module docstring). ``params``: the planner parameters a Hops
    name starts from (its priority suffix and settings apply on top); ``options``: a baseline's.
    Raises :class:`~planner.errors.PolicyError` naming the policy and the problem."""
    base, colon, settings = name.partition(":")
    if base == "hops" or base.startswith("hops-"):
        if options:
            raise PolicyError(f"policy {name!r}: the Hops planner takes planner parameters, not {sorted(options)}")
        return _hops(name, base, settings, params or PlannerParams())
    if colon or params is not None:
        raise PolicyError(f"policy {name!r}: only Hops policies take planner parameters")
    try:
        factory = BASELINES[name]
    except KeyError:
        raise PolicyError(f"unknown policy {name!r}; choose one of: {', '.join(policy_names())} (or hops-<priority>, "
                          f"priorities {', '.join(PRIORITIES)})") from None
    try:
        return factory(**options)
    except TypeError as exc:
        raise PolicyError(f"policy {name!r}: bad parameters {sorted(options)} ({exc})") from None


def _hops(name: str, base: str, settings: str, params: PlannerParams) -> Policy:
    try:
        if base != "hops":
            params = params.with_settings(f"priority={base.removeprefix('hops-')}")
        params = params.with_settings(settings)
    except ValueError as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from None
    policy = HopsPolicy(params)
    policy.name = name
    return policy


def split_policy_list(text: str) -> list[str]:
    """``--policies`` -> names; a ``key=value`` item without a colon continues the previous policy's
    settings, so ``hops,hops:restart_penalty=0.1,sigma=1.2,gavel`` gives three policies."""
    names: list[str] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        if "=" in item and ":" not in item and names and ":" in names[-1]:
            names[-1] += "," + item
        else:
            names.append(item)
    return names
