"""Service window and sensitivity adjustment (Hops §3.6): which queued jobs a planning may place.

Second step of a planning, after :func:`planner.priorities.queue_order` and before configuration
generation (:mod:`planner.configs`).

Reading of the paper's service window (§3.6, "Service window"; docs/design.md): the window is cut
from the *waiting* queue ("the i-th job in the waiting queue"; §3.1: jobs are "placed into a waiting
queue"). Walking it from its head, add each job's *minimum* requirement R_1 to a running sum; the job
at which the sum first reaches (≥) the GPUs the planning distributes is the last one in the window;
waiting jobs behind it get nothing this planning. Running jobs are not in that queue: a round plan
always plans them, with their LR weight (:mod:`planner.hops`). "The total system resources" is read
as the GPUs the planning distributes: for a round plan the nodes' free GPUs (running jobs being
re-planned count as free, so normally the whole cluster); for a fragment plan, the idle GPUs. The
window never holds fewer than one job; when the whole queue's minimum requirements do not reach the
GPUs, it is the whole queue. Jobs no configuration can serve never enter the queue handed in here
(:mod:`planner.hops`), so they neither take a place nor count toward the sum.

Sensitivity adjustment (§3.6), for fragment plans only: if the window's mean sensitivity ρ_set is
above the whole queue's ρ_queue, walk the queue from the window boundary backward (toward its tail)
and admit each job with ρ_i < ρ_queue whose minimum requirement fits the idle GPUs (≤, as docs/design.md
reads "R_k < S_t"), recomputing ρ_set, until ρ_set ≤ ρ_queue or the queue ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.views import JobView


def service_window_size(queue: Sequence[JobView], gpus: int) -> int:
    """Number of jobs at the head of ``queue`` inside the service window for ``gpus`` GPUs."""
    acc = 0
    for k, job in enumerate(queue):
        acc += job.requirements[0]
        if acc >= gpus:
            return k + 1
    return len(queue)


@dataclass(frozen=True)
class Window:
    """The jobs a planning may place: the window proper plus fillers admitted by the adjustment."""

    jobs: tuple[JobView, ...]
    size: int  # jobs in the window proper (a prefix of the queue)
    fillers: tuple[str, ...]  # ids of low-sensitivity jobs admitted from behind the window


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def sensitivity_adjustment(queue: Sequence[JobView], size: int, idle_gpus: int) -> tuple[str, ...]:
    """Ids of jobs behind the window to admit as fragment fillers (see module docstring)."""
    if size >= len(queue):
        return ()
    rho_queue = _mean([j.sensitivity for j in queue])
    in_set = [j.sensitivity for j in queue[:size]]
    fillers: list[str] = []
    for job in queue[size:]:
        if _mean(in_set) <= rho_queue:
            break
        if job.sensitivity < rho_queue and job.requirements[0] <= idle_gpus:
            fillers.append(job.job_id)
            in_set.append(job.sensitivity)
    return tuple(fillers)


def select(queue: Sequence[JobView], gpus: int, *, rule: str = "waiting",
           fragment: bool = False, adjust: bool = True) -> Window:
    """The window for ``queue`` (already in priority order) over ``gpus`` plannable GPUs; ``rule``
    ``"all"``: the whole queue (no window), any other rule: the minimum-requirement cut."""
    size = len(queue) if rule == "all" else service_window_size(queue, gpus)
    fillers = sensitivity_adjustment(queue, size, gpus) if (fragment and adjust) else ()
    chosen = set(fillers)
    jobs = tuple(queue[:size]) + tuple(j for j in queue[size:] if j.job_id in chosen)
    return Window(jobs=jobs, size=size, fillers=fillers)
