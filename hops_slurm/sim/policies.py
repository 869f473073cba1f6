"""Policy lookup for the simulator, and ``fifo-greedy``, a simple real policy of its own.

Data flow: ``--policies a,b`` -> :func:`make_policy` per name -> a fresh :class:`planner.views.Policy`
per run. Names: ``hops`` (planner.hops.HopsPolicy), any name ``planner.baselines.make_policy`` knows
(gavel, sia, themis, slurm-backfill, ablations), and ``fifo-greedy`` (below), and ``hops-<priority>`` (the Hops architecture with another queue priority
from planner.priorities: hops-las, hops-sjf, hops-srtf, hops-fifo, hops-ftf; the §4.5 ablation). Any Hops name
may carry planner parameters after a colon: ``hops:restart_penalty=0.1`` (see planner.params). The planner packages
are imported lazily, so the simulator works while they are still being written.

``fifo-greedy``: first come, first served, never preempts. Running jobs keep their config; pending
jobs in submission order get the first config that fits: for each acceptable GPU count from largest to
smallest, the first single node (cluster order) with enough free GPUs, else consecutive nodes of one
GPU type filled with their free GPUs. Supports fragment plans (fills GPUs freed inside a round).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

from hops_slurm.errors import HopsError
from planner.views import ClusterView, Config, JobView, Plan, Policy, freeze_config


def first_fit(cluster: ClusterView, free: dict[str, int], n: int) -> Config | None:
    """First single node with ``n`` free GPUs, else the first run of consecutive same-type nodes."""
    for node in cluster.nodes:
        if free[node.name] >= n:
            return freeze_config({node.name: n})
    nodes = cluster.nodes
    for i, first in enumerate(nodes):
        config: dict[str, int] = {}
        need = n
        for node in nodes[i:]:
            if node.gpu_type != first.gpu_type or free[node.name] == 0:
                break
            take = min(free[node.name], need)
            config[node.name] = take
            need -= take
            if need == 0:
                return freeze_config(config)
    return None


class FifoGreedy(Policy):
    name = "fifo-greedy"
    supports_fragment_plans = True

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        free = {n.name: n.free_gpus for n in cluster.nodes}
        assignments: dict[str, Config | None] = {}
        for job in jobs:
            if job.current is not None and not fragment:
                assignments[job.job_id] = job.current
                for node, g in job.current.items():
                    free[node] -= g
        order = sorted((j for j in jobs if j.current is None or fragment), key=lambda j: (j.submit_time, j.job_id))
        for job in order:
            choice = None
            for n in reversed(job.requirements):
                choice = first_fit(cluster, free, n)
                if choice is not None:
                    break
            assignments[job.job_id] = choice
            for node, g in (choice or {}).items():
                free[node] -= g
        return Plan(assignments, {"order": [j.job_id for j in order]})


LOCAL: dict[str, Callable[[], Policy]] = {"fifo-greedy": FifoGreedy}


def _baselines_factory() -> Callable[[str], Policy] | None:
    try:
        module = importlib.import_module("planner.baselines")
    except ImportError:
        return None
    return getattr(module, "make_policy", None)


def make_policy(name: str) -> Policy:
    """A fresh policy by name (see module docstring); unknown names list what is available."""
    if name in LOCAL:
        return LOCAL[name]()
    base, _, settings = name.partition(":")
    if base == "hops" or base.startswith("hops-"):
        try:
            module = importlib.import_module("planner.hops")
        except ImportError as exc:
            raise HopsError(f"policy {name!r} is not available in this installation ({exc})") from exc
        if name == "hops":
            return module.HopsPolicy()
        params_module = importlib.import_module("planner.params")
        # priority ablations: hops-las, hops-sjf, hops-srtf, hops-fifo, hops-ftf (planner.priorities names);
        # planner parameters after a colon: hops:restart_penalty=0.1,sigma=1.2
        values: dict[str, object] = {}
        if base != "hops":
            values["priority"] = base.removeprefix("hops-")
        values.update(planner_settings(name, settings, params_module.PlannerParams))
        try:
            policy = module.HopsPolicy(params_module.PlannerParams(**values))
        except (TypeError, ValueError) as exc:
            raise HopsError(f"policy {name!r}: {exc}") from exc
        policy.name = name
        return policy
    if name not in available_policies() and _baseline_names() is not None:
        raise HopsError(f"unknown policy {name!r}; available: {', '.join(available_policies())}")
    factory = _baselines_factory()
    if factory is not None:
        try:
            return factory(name)
        except (KeyError, ValueError) as exc:
            raise HopsError(f"unknown policy {name!r}: {exc}; available: {', '.join(available_policies())}") from exc
    raise HopsError(f"unknown policy {name!r}; available: {', '.join(available_policies())}")


def planner_settings(name: str, settings: str, params: type) -> dict[str, object]:
    """``key=value,...`` after a Hops policy's colon -> PlannerParams fields, each converted to the
    field's type (``lambda`` is accepted for ``lambda_``). Unknown keys and bad values name the policy."""
    fields = {f.name: f for f in dataclasses.fields(params)}
    out: dict[str, object] = {}
    for item in (x for x in settings.split(",") if x.strip()):
        key, eq, raw = (part.strip() for part in item.partition("="))
        key = "lambda_" if key == "lambda" else key
        if not eq or key not in fields:
            raise HopsError(f"policy {name!r}: {item!r} is not key=value with a planner parameter "
                            f"({', '.join(sorted(k.rstrip('_') for k in fields))})")
        default = fields[key].default
        try:
            if isinstance(default, bool):
                value: object = {"true": True, "false": False}[raw.lower()]
            elif isinstance(default, (int, float)) or default is None:
                value = float(raw)
            else:
                value = raw
        except (KeyError, ValueError):
            raise HopsError(f"policy {name!r}: {key.rstrip('_')}={raw!r} is not a valid value") from None
        out[key] = value
    return out


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


def _baseline_names() -> tuple[str, ...] | None:
    try:
        module = importlib.import_module("planner.baselines")
    except ImportError:
        return ()
    names = getattr(module, "POLICY_NAMES", None)
    return tuple(names) if names is not None else None


def available_policies() -> list[str]:
    """Names that can be made right now (baselines listed if planner.baselines exposes POLICY_NAMES)."""
    names = list(LOCAL)
    try:
        importlib.import_module("planner.hops")
        names.insert(0, "hops")
    except ImportError:
        pass
    names += [n for n in (_baseline_names() or ()) if n not in names]
    return names
