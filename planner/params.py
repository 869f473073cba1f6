"""Planner parameters: the one model of the knobs of :class:`planner.hops.HopsPolicy`.

Where it sits: at the planner's edge. Every way of setting these values ends here, with these defaults
and these checks: the site configuration's ``[planner]`` section (:mod:`hops_slurm.config` derives its
pydantic section from the fields below and checks each value with :func:`check`), the ``key=value``
settings of a policy name (``hops:restart_penalty=0.1``, :meth:`PlannerParams.with_settings`), and code.
What each parameter means and why its default is what it is: docs/design.md, "Planner parameters".
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.configs import SPAN_RULES
from planner.priorities import PRIORITIES

SOLVERS = ("auto", "CBC", "HiGHS")  # auto: planner.solution.pick_solver
FORMULATIONS = ("compact", "plain")
WINDOW_RULES = ("waiting", "active", "all")


@dataclass(frozen=True)
class PlannerParams:
    """Parameters of one Hops planner (docs/design.md, "Planner parameters"). ``lambda_`` is spelled
    ``lambda`` in configuration files and policy names; ``None`` means the priority's own λ."""

    priority: str = "lr"
    lambda_: float | None = None
    sigma: float = 1.4
    window: str = "waiting"
    sensitivity_adjustment: bool = True
    backfill: bool = True
    restart_penalty: float = 0.1
    preempt_penalty: float = 0.0
    min_run_time: float = 300.0
    min_run_growth: float = 1.0
    settle_time: float = 0.0
    move_toll: float = 0.0
    requeue_toll: float = 0.0
    return_time: float = 0.0
    fragment_affinity: float = 0.0
    fragment_span_limit: int = 0
    fragment_span_after: int = 0
    young_moves: float = 0.0
    move_gain: float = 0.0
    requeue_price: float = 0.0
    fragment_swaps: bool = True
    swap_shorter: float = 0.0
    swap_narrow: bool = True
    swap_soonest: bool = False
    swap_back: float = 3600.0
    fragment_moves: bool = False
    fragment_fill: bool = False
    split_spans: bool = True
    fragment_growth: float = 60.0
    stretch_weights: bool = True
    gpu_efficiency: float = 0.0
    remaining_weight: float = 0.5
    remaining_basis: str = "age"
    growth_discount: float = 0.5
    keep_shorter: float = 0.0
    idle_moves: bool = False
    pin_running: bool = True
    explore: bool = True
    explore_moves: bool = True
    explore_spanning: bool = True
    explore_scaling: bool = False
    explore_floor: float = 0.0
    explore_room: bool = False
    explore_types_once: bool = False
    explore_estimate: bool = True
    head_reservation: bool = True
    reserve_after: float = 1.75
    head_override: bool = False
    reserve_bound: float = 2.0
    protect_after: float = 0.0
    protect_fragment_heads: bool = True
    no_take_back: bool = True
    entity_tolerance: float = 0.05
    formulation: str = "compact"
    spans: str = "bucketed"
    columns: int = 6
    solver: str = "auto"
    gap: float = 0.01
    node_limit: int = 2000
    time_limit: float = 60.0
    fairshare_weight: float = 0.0
    wait_offset: float = 0.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            try:
                check(f.name, value)
            except ValueError as exc:
                raise ValueError(f"planner {setting_key(f.name)} = {value!r}: {exc}") from None

    def with_settings(self, text: str) -> PlannerParams:
        """These parameters with ``key=value,...`` applied (the settings after a policy name's colon):
        each value is read as its field's type (``true``/``false`` for switches, ``none`` for an unset
        λ); an unknown key or a bad value raises ValueError naming it."""
        values: dict[str, object] = {}
        for item in (x for x in text.split(",") if x.strip()):
            key, eq, raw = (part.strip() for part in item.partition("="))
            name = field_name(key)
            if not eq or name not in FIELD_TYPES:
                raise ValueError(f"{item!r} is not key=value with a planner parameter ({', '.join(setting_keys())})")
            values[name] = _read(name, raw)
        return dataclasses.replace(self, **values)


#: field -> its type (``bool``, ``int``, ``float``, ``float | None``, ``str``), for the edges that read text
FIELD_TYPES: dict[str, Any] = typing.get_type_hints(PlannerParams)


def field_name(key: str) -> str:
    """The field a configuration key names (``lambda`` -> ``lambda_``)."""
    return "lambda_" if key == "lambda" else key


def setting_key(name: str) -> str:
    """The key a field is spelled with in configuration files and policy names."""
    return name.rstrip("_")


def setting_keys() -> list[str]:
    return [setting_key(f.name) for f in dataclasses.fields(PlannerParams)]


def _number(low: float, high: float, *, low_open: bool = False, high_open: bool = False,
            integer: bool = False) -> Callable[[object], bool]:
    def ok(v: object) -> bool:
        if isinstance(v, bool) or not isinstance(v, int if integer else (int, float)) or not math.isfinite(v):
            return False
        return (low < v if low_open else low <= v) and (v < high if high_open else v <= high)
    return ok


def _choice(names: typing.Iterable[str]) -> Callable[[object], bool]:
    allowed = tuple(names)
    return lambda v: isinstance(v, str) and v in allowed


def _switch(v: object) -> bool:
    return isinstance(v, bool)


_lambda = _number(0.0, 100.0)

#: field -> (test, what a valid value is): the one validation of every planner parameter
RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "priority": (_choice(PRIORITIES), f"one of {', '.join(PRIORITIES)}"),
    "lambda_": (lambda v: v is None or _lambda(v), "a number in [0, 100], or unset for the priority's own "
                "(1; 2 with ftf)"),
    "sigma": (_number(0.0, 100.0, low_open=True), "a number in (0, 100] (the paper uses 1.4)"),
    "window": (_choice(WINDOW_RULES), f"one of {', '.join(WINDOW_RULES)}"),
    "sensitivity_adjustment": (_switch, "true or false"),
    "backfill": (_switch, "true or false: jobs behind the window fill idle GPUs the blocked head does not need (planner.backfill)"),
    "restart_penalty": (_number(0.0, 1.0, high_open=True), "a number in [0, 1); 0 is the paper's objective"),
    "preempt_penalty": (_number(0.0, 100.0), "a number in [0, 100]: a running job's current placement is worth "
                        "(1 + this) of its gain, so a waiting job takes its GPUs only when it is worth that much more"),
    "min_run_time": (_number(0.0, 864000.0), "seconds in [0, 864000]: how long a job runs in a placement before "
                     "it may be moved or preempted (Slurm's PreemptExemptTime)"),
    "min_run_growth": (_number(1.0, 100.0), "a number in [1, 100]: the minimum run time is multiplied by it for "
                       "each earlier preemption of the job (1 = the same for every run)"),
    "settle_time": (_number(0.0, 864000.0), "seconds in [0, 864000]: a running job placed less than this long ago is not "
                    "moved by a round plan (the ILP or exploration), though it may still be preempted for a waiting job "
                    "(planner.settle; 0 = off)"),
    "move_toll": (_number(0.0, 100.0), "a number in [0, 100]: a running job preempted k times pays a move as if its "
                  "restart cost were (1 + this k) times its own (planner.move_toll; 0 = off)"),
    "requeue_toll": (_number(0.0, 100.0), "a number in [0, 100]: every candidate of a running job preempted k times is "
                     "worth (1 + this k) of its gain, so a requeue is dearer (planner.move_toll; 0 = off)"),
    "return_time": (_number(0.0, 864000.0), "seconds in [0, 864000]: a running job is not moved back onto a GPU type it "
                    "left less than this long ago unless its estimate there is 1.5x its current one (planner.move_back; 0 = off)"),
    "fragment_affinity": (_number(0.0, 1.0), "a number in [0, 1]: a fragment plan gives a waiting job idle GPUs only "
                          "on a config estimated at this share of its best rate on the whole cluster or more, and "
                          "cuts its window from the jobs that have one (planner.affinity; 0 = off)"),
    "fragment_span_limit": (_number(0, 1000, integer=True), "an integer in [0, 1000]: a fragment plan gives a waiting "
                            "job a config over more than this many servers only once it has waited its expected run "
                            "time (planner.span_limit; 0 = off)"),
    "fragment_span_after": (_number(0, 1000, integer=True), "an integer in [0, 1000]: with fragment_span_limit, only "
                            "jobs preempted this many times or more are held to it (planner.span_limit; 0 = every job)"),
    "young_moves": (_number(0.0, 864000.0), "seconds in [0, 864000]: a round plan does not move a running job placed "
                    "less than this long ago onto GPUs it frees by moving or requeuing others (it solves again "
                    "without that job's moves; planner.displace; 0 = off)"),
    "move_gain": (_number(0.0, 100.0), "a number in [0, 100]: a round plan moves a running job only to a config "
                  "estimated at least this many times as fast as where it runs (planner.move_gain; 0 = off)"),
    "requeue_price": (_number(0.0, 100.0), "a number in [0, 100]: with the lr priority a running job is weighed by the latency "
                      "ratio a requeue would give it (restart, unsaved work, the wait until GPUs free up for it, at most "
                      "this many minimum run times; planner.requeue_price; 0 = off)"),
    "fragment_swaps": (_switch, "true or false: a round plan may preempt a running job for a waiting job that also fills "
                       "idle GPUs when eq. 11 without the premium rises (planner.fragfill)"),
    "swap_shorter": (_number(0.0, 100.0), "a number in [0, 100]: with fragment_swaps, a swap requeues the job it displaces "
                     "only when the waiting job's remaining time is at most this many times the displaced job's "
                     "(planner.swap_order; 0 = off)"),
    "swap_narrow": (_switch, "true or false: a fragment swap displaces the placed job of fewest GPUs that makes it, "
                    "then the lowest worth; false = the lowest worth (planner.fragfill)"),
    "swap_soonest": (_switch, "true or false: a fragment swap displaces the placed job expected to get GPUs again first "
                     "(planner.swap_order); false = the lowest worth"),
    "swap_back": (_number(0.0, 864000.0), "seconds in [0, 864000]: with fragment_swaps, a swap requeues only a job expected "
                  "to get GPUs again within this time (planner.swap_order; 0 = any)"),
    "fragment_moves": (_switch, "true or false: a round plan may move a running job to idle GPUs where the move pays for "
                       "itself, for a waiting job that takes its GPUs and fills idle ones (planner.fragfill)"),
    "fragment_fill": (_switch, "true or false: a round plan may preempt a running job for a waiting job that puts at least "
                      "as many idle GPUs to work as it takes, whatever their weights (planner.fragfill)"),
    "fragment_growth": (_number(0.0, 864000.0), "seconds in [0, 864000]: a round plan grows a running job into idle GPUs "
                        "that no waiting job can use when the move saves it at least this long (planner.fraggrow; 0 = off)"),
    "split_spans": (_switch, "true or false: a placement Slurm would not split as planned is kept in place, split as "
                    "Slurm splits it, or left out (planner.fragsplit)"),
    "stretch_weights": (_switch, "true or false: eq. 11 weights a job by 1 + its latency ratio (its slowdown so far) "
                        "instead of the latency ratio (planner.stretch; the lr priority only)"),
    "gpu_efficiency": (_number(0.0, 10.0), "a number in [0, 10]: when the planned jobs' smallest demands exceed the free "
                       "GPUs, each candidate's gain is multiplied by its gain per GPU over the job's best, to this power "
                       "(planner.jct_gain; 0 = off)"),
    "remaining_weight": (_number(0.0, 10.0), "a number in [0, 10]: each planned job's eq. 11 weight is multiplied by (the "
                         "mean expected remaining run time / its own) to this power (planner.jct_gain; 0 = off)"),
    "remaining_basis": (_choice(("age", "slowest")), "age or slowest: with remaining_weight, a job's remaining run time "
                        "is its age times the share of its samples left, or its remaining samples on its slowest candidate "
                        "(weight x gain = the share of its remaining work done per second; planner.jct_gain)"),
    "growth_discount": (_number(0.0, 1.0, high_open=True), "a number in [0, 1): when the planned jobs' smallest demands "
                        "exceed the free GPUs, a candidate's gain above its job's smallest-count gain on the same GPU type "
                        "counts only (1 - this) of itself (planner.growth; 0 = off)"),
    "keep_shorter": (_number(0.0, 100.0), "a number in [0, 100]: in a round plan a running job's weight is multiplied by "
                     "1 + this when every waiting job whose smallest count is at least the GPUs it holds has more expected "
                     "run time left (planner.keep_shorter; 0 = off)"),
    "idle_moves": (_switch, "true or false: a round plan whose planned jobs' smallest demands fit the free GPUs (nothing "
                   "waits for them) prices a running job's moves by their restart and lost work only, without "
                   "restart_penalty (planner.jct_gain)"),
    "pin_running": (_switch, "true or false"),
    "explore": (_switch, "true or false: try a config no record measured when its GPUs sit idle (planner.explore)"),
    "explore_moves": (_switch, "true or false: a running job never preempted may be moved to explore an unmeasured config; "
                      "false = running jobs explore only onto GPUs idle for a whole round (planner.explore)"),
    "explore_spanning": (_switch, "true or false: a running job may be moved to explore an unmeasured config on several "
                         "servers; false = only at a (re)start (its optimistic rate has no communication in it)"),
    "explore_scaling": (_switch, "true or false: a running job's optimistic rate on an unmeasured config is scaled by the "
                        "share of its single-GPU rate it keeps where it runs (planner.explore_scaling)"),
    "explore_floor": (_number(0.0, 10.0), "a number in [0, 10]: a running job is moved to explore an unmeasured config only "
                      "where its estimate there is at least this share of its planned rate (planner.explore_floor; 0 = off)"),
    "explore_room": (_switch, "true or false: a running job is moved to explore an unmeasured config only as part of a "
                     "placement that starts a waiting job now, or onto GPUs idle for a whole round (planner.explore_room)"),
    "explore_types_once": (_switch, "true or false: a running job is moved to explore an unmeasured config only onto a GPU "
                           "type it has not run on; jobs that start or restart explore as before (planner.explore_types)"),
    "explore_estimate": (_switch, "true or false: a running job is moved to explore an unmeasured config on several servers "
                         "only where its estimate there (not the optimistic bound) pays the move (planner.explore_estimate)"),
    "head_reservation": (_switch, "true or false: the queue's first waiting job gets EASY's reservation against the other "
                         "waiting jobs of every plan (planner.reserve)"),
    "reserve_after": (_number(0.0, 100.0), "a number in [0, 100]: the latency ratio (wait / expected run time) from "
                      "which the queue head gets its reservation (planner.reserve; 0 = always)"),
    "head_override": (_switch, "true or false: with head_reservation, a queue head whose reservation would take its latency "
                      "ratio past reserve_bound starts by preemption and keeps the overriding weight while it runs "
                      "(planner.reserve); false = the reservation only"),
    "reserve_bound": (_number(0.0, 100.0), "a number in [0, 100]: with head_reservation and head_override, the queue head starts by "
                      "preemption once waiting for its reservation would take its latency ratio past this (planner.reserve; "
                      "0 = once it would wait longer than its run time)"),
    "protect_after": (_number(0.0, 100.0), "a number in [0, 100]: with head_reservation, a running job whose latency ratio "
                      "has reached this and the reserved head's keeps the overriding weight of a head started by "
                      "preemption: a round plan may move it but not leave it waiting (planner.reserve; 0 = off)"),
    "protect_fragment_heads": (_switch, "true or false: with head_reservation and head_override, a queue head that a fragment plan starts on "
                               "idle GPUs when a round plan would start it by preemption keeps the overriding weight of "
                               "a head started so while it runs (planner.reserve); false = only a round plan's heads"),
    "no_take_back": (_switch, "true or false: a job a round plan requeued does not take its GPUs back from the job "
                     "started on them while that job keeps them (planner.take_back); false = it may"),
    "entity_tolerance": (_number(0.0, 1.0, high_open=True), "a number in [0, 1); 0 turns entity classes off"),
    "formulation": (_choice(FORMULATIONS), f"one of {', '.join(FORMULATIONS)}"),
    "spans": (_choice(SPAN_RULES), f"one of {', '.join(SPAN_RULES)}: spanning configs per speed bucket, or from every "
              "start node (the paper's rule; the compact model only, the plain model always takes every start)"),
    "columns": (_number(0, 1000, integer=True), "a whole number in [0, 1000]: columns per waiting job the compact "
                "model starts with and adds per pricing round (planner.columns); 0 = every column from the start"),
    "solver": (_choice(SOLVERS), f"one of {', '.join(SOLVERS)}"),
    "gap": (_number(0.0, 1.0, high_open=True), "a number in [0, 1), e.g. 0.01 for 1%"),
    "node_limit": (_number(1, 10_000_000, integer=True), "a whole number of branch-and-bound nodes in [1, 10^7]"),
    "time_limit": (_number(0.1, 86400.0), "seconds in [0.1, 86400]"),
    "fairshare_weight": (_number(0.0, 1000.0), "a number in [0, 1000]: the queue priority adds it times the owner's "
                         "fair-share factor (0..1; planner.fairshare); 0 = latency ratio only"),
    "wait_offset": (_number(0.0, 1.0), "seconds in [0, 1]: added to every job's wait as the planner reads it, to "
                    "measure how far near-equal plans move a run's figures (0 = off)"),
}


def check(name: str, value: object) -> object:
    """``value`` if it is valid for the field ``name``; else ValueError saying what a valid one is."""
    test, what = RULES[name]
    if not test(value):
        raise ValueError(f"must be {what}")
    return value


def _read(name: str, raw: str) -> object:
    kind = FIELD_TYPES[name]
    text = raw.lower()
    if kind is bool:
        if text not in ("true", "false"):
            raise ValueError(f"{setting_key(name)}={raw!r} is not valid: must be true or false")
        return text == "true"
    if kind is str:
        return raw
    if text == "none" and type(None) in typing.get_args(kind):
        return None
    try:
        return int(raw) if kind is int else float(raw)
    except ValueError:
        raise ValueError(f"{setting_key(name)}={raw!r} is not valid: must be a number") from None
