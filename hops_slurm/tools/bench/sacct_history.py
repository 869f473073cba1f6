"""A generated site history as ``sacct`` exports, for the what-if benchmark (and tests at small sizes).

Where it sits: a helper of :mod:`hops_slurm.tools.bench.whatif_bench` (not itself a benchmark: it has no ``run``).
:func:`generate` draws ``n`` GPU jobs from ``random.Random(seed)`` and schedules them first come,
first served on a cluster of ``gpus`` GPUs (a stand-in for the site's own Slurm, so the recorded
starts and ends are consistent: no instant holds more GPUs than the cluster has); :func:`to_json`
writes them in Slurm 22.05's ``sacct --json`` layout and :func:`to_parsable2` as ``sacct --parsable2``
with the field list whatif documents.

Draws: Poisson arrivals at ``rate`` jobs per hour; GPUs 1/2/4/8 with 50/20/20/10 %; run time
log-uniform in 5 min .. 8 h; states COMPLETED 90 %, FAILED 5 %, CANCELLED 3 %, TIMEOUT 2 %. One job in
a hundred is cancelled while pending (no start) and one in a hundred has no GPUs, so the export also
has rows whatif must report and leave out. Users u0..u19, names by user. Every job has the time limit
:data:`LIMIT_MINUTES` (a partition's default: 8 h, the longest run drawn).
"""

from __future__ import annotations

import heapq
import json
import math
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from hops_slurm.whatif.read_parsable2 import FORMAT

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
LIMIT_MINUTES = 8 * 60


@dataclass(frozen=True)
class GenJob:
    job_id: int
    name: str
    user: str
    gpus: int
    submit: int
    start: int  # 0: never started
    end: int
    state: str


def generate(n: int, seed: int = 0, gpus: int = 128, rate: float = 24.0) -> list[GenJob]:
    rng = random.Random(seed)
    t = float(T0)
    draws = []
    for i in range(n):
        t += -math.log(1.0 - rng.random()) * 3600.0 / rate
        g = rng.choices((1, 2, 4, 8), weights=(50, 20, 20, 10))[0]
        run = math.exp(rng.uniform(math.log(300), math.log(8 * 3600)))
        state = rng.choices(("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"), weights=(90, 5, 3, 2))[0]
        kind = rng.random()
        user = f"u{rng.randrange(20)}"
        draws.append((i + 1, int(t), 0 if kind < 0.01 else g, int(run), state, kind < 0.02 and kind >= 0.01, user))
    free = gpus
    running: list[tuple[int, int]] = []  # (end, gpus)
    clock = float(T0)
    out = []
    for job_id, submit, g, run, state, pending_cancel, user in draws:
        name = f"{user}-train-{job_id % 7}"
        if pending_cancel:
            out.append(GenJob(job_id, name, user, g, submit, 0, submit + 600, "CANCELLED"))
            continue
        clock = max(clock, submit)
        need = max(g, 0)
        while free < need:
            end, held = heapq.heappop(running)
            clock = max(clock, end)
            free += held
        start = int(clock)
        end = start + run
        free -= need
        heapq.heappush(running, (end, need))
        out.append(GenJob(job_id, name, user, g, submit, start, end, state))
    return out


def _tres(g: int) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [{"type": "cpu", "name": None, "id": 1, "count": max(g, 1) * 4},
                                      {"type": "node", "name": None, "id": 4, "count": 1 if g <= 4 else 2}]
    if g:
        items.append({"type": "gres", "name": "gpu", "id": 1001, "count": g})
    return items


def to_json(jobs: list[GenJob]) -> str:
    """Slurm 22.05's ``sacct --json`` layout (meta.plugin.type openapi/dbv0.0.38), the fields whatif reads."""
    rows = [{
        "job_id": j.job_id, "name": j.name, "user": j.user, "partition": "gpu",
        "state": {"current": j.state, "reason": "None"},
        "time": {"submission": j.submit, "start": j.start, "end": j.end, "elapsed": j.end - j.start if j.start else 0,
                 "limit": LIMIT_MINUTES},
        "comment": {"administrator": None, "job": None, "system": None},
        "tres": {"allocated": _tres(j.gpus) if j.start else [], "requested": _tres(j.gpus)},
    } for j in jobs]
    doc = {"meta": {"plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
                    "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}},
           "errors": [], "jobs": rows}
    return json.dumps(doc) + "\n"


def _iso(t: int) -> str:
    return "Unknown" if not t else datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def to_parsable2(jobs: list[GenJob]) -> str:
    """``sacct --parsable2 --format=`` whatif's field list (NodeList left empty: the generator places no node,
    so whatif infers the cluster from the recorded peak)."""
    lines = [FORMAT.replace(",", "|")]
    for j in jobs:
        tres = f"billing=1,cpu={max(j.gpus, 1) * 4}" + (f",gres/gpu={j.gpus}" if j.gpus else "") + f",node={1 if j.gpus <= 4 else 2}"
        lines.append("|".join([str(j.job_id), j.name, j.user, "gpu", j.state, _iso(j.submit), _iso(j.start),
                               _iso(j.end), f"{LIMIT_MINUTES // 60:02d}:00:00", tres if j.start else "", tres, "",
                               ""]))  # no AdminComment, NodeList
    return "\n".join(lines) + "\n"
