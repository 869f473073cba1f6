"""Every assumption a what-if made, each marked by where it came from.

Where it sits: after :func:`hops_slurm.whatif.pipeline.run_whatif`, before the output: ``hops-slurm
whatif`` prints :func:`lines` on stderr, ``--json`` carries :func:`as_json` under ``meta.assumptions`` and
``--out`` writes them into results.md. Pure: it reads the what-if's own data (the export's jobs, the
derived simulator jobs, the cluster, the options and the site's configuration), nothing else.

A mark says how far to trust each line (docs/whatif.md, "What whatif assumes"):

* ``export``: read from the export (times, GPU counts, node names, typed GRES, partitions, limits);
* ``config``: the site's configuration (``--config``, ``$HOPS_CONFIG``, /etc/hops-slurm/hops.toml) or,
  without one, its documented defaults (etc/hops.toml's); ``given``: a command-line flag or file;
* ``measured``: measured, but not on the site's jobs (Gavel's throughput tables; the calibration the
  simulator derives from them);
* ``guessed``: not known from anything the site gave; chosen by whatif. Override it to change it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hops_slurm.config import SiteConfig
from hops_slurm.report.timefmt import format_elapsed
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.text import printable
from hops_slurm.whatif.assumptions import Assumptions, Derived
from hops_slurm.whatif.history import HistoryJob

Mark = Literal["export", "config", "given", "measured", "guessed"]
MARKS: tuple[Mark, ...] = ("export", "config", "given", "measured", "guessed")


@dataclass(frozen=True)
class Stated:
    """One assumption: what it is about, what was taken, and where that came from."""

    topic: str
    text: str
    mark: Mark

    def line(self) -> str:
        return f"  [{self.mark}] {self.topic}: {self.text}"


@dataclass(frozen=True)
class Context:
    """What a what-if ran with, beyond its jobs: the cluster, its source, the Hops side's settings."""

    cluster: ClusterSpec
    cluster_given: str  # "" when inferred from the export, else the --cluster argument
    site: SiteConfig
    site_source: str  # "--config FILE", "$HOPS_CONFIG (FILE)", "/etc/hops-slurm/hops.toml" or "" (defaults)
    round_seconds: float
    refresh_seconds: float
    round_given: bool  # --round-seconds / --refresh-seconds given on the command line
    costs: CostModel
    assumptions: Assumptions
    assumptions_given: bool  # --assumptions FILE


def _t(seconds: float) -> str:
    """A duration as ``hops-slurm report`` prints one (``[D-]HH:MM:SS``)."""
    return format_elapsed(seconds)


def _names(values: Sequence[str], limit: int = 6) -> str:
    shown = [printable(v, 40) for v in values[:limit]]
    return ", ".join(shown) + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _cluster(jobs: Sequence[HistoryJob], ctx: Context) -> list[Stated]:
    c = ctx.cluster
    kinds = "; ".join(f"{k.count} x {k.gpus} {k.gpu_type}" for k in c.server_kind)
    if ctx.cluster_given:
        return [Stated("cluster", f"{printable(ctx.cluster_given, 120)}: {kinds} ({c.total_gpus} GPUs)", "given")]
    named = sorted({n for j in jobs for n in j.node_names})
    out = []
    if named:
        out.append(Stated("cluster nodes", f"{len(named)} nodes named by the jobs' node lists ({_names(named)})", "export"))
        out.append(Stated("GPUs per node", f"{kinds} ({c.total_gpus} GPUs): each node has the most GPUs its jobs held at "
                          "one instant (a lower bound: GPUs no job used are not seen; give --cluster FILE)", "guessed"))
    else:
        out.append(Stated("cluster", f"{kinds} ({c.total_gpus} GPUs): the export names no nodes; the smallest cluster "
                          "of 8-GPU servers its recorded schedule fits on (give --cluster FILE)", "guessed"))
    truth = GroundTruth()
    typed = Counter(j.gpu_type for j in jobs if j.gpu_type)
    known = sorted(t for t in typed if t in truth.gpu_types)
    unknown = sorted(t for t in typed if t not in truth.gpu_types)
    if known:
        out.append(Stated("GPU types", f"{', '.join(known)} from the jobs' typed GRES (gres/gpu:TYPE)", "export"))
    untyped = sum(1 for j in jobs if not j.gpu_type)
    if untyped or unknown:
        what = f"{untyped} jobs name no GPU type" if untyped else ""
        if unknown:
            what += ("; " if what else "") + f"types without measured throughput ({_names(unknown)})"
        out.append(Stated("GPU types", f"{what}: replayed as {ctx.assumptions.defaults.gpu_type}", "guessed"))
    parts = sorted({j.partition for j in jobs if j.partition})
    if parts:
        out.append(Stated("partitions", f"the jobs ran in {_names(parts)}; the replay has one Hops partition over every "
                          "node above (every job a Hops job, none outside it)", "guessed"))
    return out


def _jobs(jobs: Sequence[HistoryJob], derived: Sequence[Derived], ctx: Context) -> list[Stated]:
    d = ctx.assumptions.defaults
    runs = [j.run_time for j in jobs if j.run_time is not None]
    out = [Stated("jobs", f"{len(derived)} jobs: submission, start and end times, GPU counts (AllocTRES), users; "
                  f"run times {_t(min(runs))} to {_t(max(runs))} (median {_t(statistics.median(runs))})"
                  if runs else f"{len(derived)} jobs", "export")]
    source = Counter(x.source for x in derived)
    if source["hops"]:
        out.append(Stated("model identity", f"{source['hops']} jobs: model= and gpus= from their #HOPS admin comment", "export"))
    plain = source["default"]
    if plain:
        mark: Mark = "given" if ctx.assumptions_given else "guessed"
        out.append(Stated("model identity", f"{plain} jobs without #HOPS: each runs {d.model}; jobs of one user share "
                          "that model (one signature, so only a user's first job is new to Hops)", mark))
        out.append(Stated("GPU counts Hops may choose", f"{plain} jobs without #HOPS: the recorded count and "
                          f"{d.halvings} halvings of it (8 -> {', '.join(map(str, _halved(8, d.halvings)))})", mark))
    if source["override"]:
        out.append(Stated("overrides", f"{source['override']} jobs matched a [[job]] entry of --assumptions", "given"))
    models = sorted({x.spec.model for x in derived})
    out.append(Stated("throughput per GPU type", f"Gavel's measurements of {_names(models, 3)} on each GPU type and "
                      "count, scaled so a job at its recorded count runs as long as it ran (not the site's models)",
                      "measured"))
    limits = Counter(x.limit_source for x in derived)
    if limits["recorded"]:
        out.append(Stated("time limits", f"{limits['recorded']} jobs: their recorded Timelimit", "export"))
    if limits["assumed"]:
        out.append(Stated("time limits", f"{limits['assumed']} jobs without one: the longest run of their partition "
                          "(what Slurm's backfill plans with)", "guessed"))
    return out


def _halved(n: int, halvings: int) -> list[int]:
    return sorted({max(1, n >> k) for k in range(halvings + 1)})


def _hops_side(ctx: Context) -> list[Stated]:
    s, e = ctx.site, ctx.site.engine
    where = ctx.site_source or "the documented defaults (etc/hops.toml; no --config, $HOPS_CONFIG or /etc/hops-slurm/hops.toml)"
    timing: Mark = "given" if ctx.round_given else "config"
    p = s.planner
    out = [
        Stated("Hops side", "the production engine (hops-slurm daemon's), on a simulated slurmctld: refresh, probes in "
               "place, plans, moves and their prices, restart costs it measures", "config"),
        Stated("configuration", where, "config"),
        Stated("timing", f"round {_t(ctx.round_seconds)}, queue refresh {_t(ctx.refresh_seconds)}, monitor step "
               f"{_t(e.monitor_interval)} (an ended or new job -> refresh and fragment plan)", timing),
        Stated("probes", ("in place: a job of a model new to Hops starts at once on idle GPUs, measured by its "
                          "runtime records; probe jobs only when no GPU is idle") if e.probe_in_place
               else "every new model is probed before it is planned (probe_in_place = false)", "config"),
        Stated("planner", f"priority {p.priority}, sigma {p.sigma:g}, min_run_time {_t(p.min_run_time)}, "
               f"restart price until measured {_t(e.restart_cost_default)}", "config"),
        Stated("probe jobs", f"when one runs: {_t(ctx.cluster.profiler.probe_seconds)} on "
               f"{ctx.cluster.profiler.gpus_per_type} dedicated profiler GPU(s) per type (the simulator's profiler; "
               "the export shows none)", "guessed"),
        Stated("restart costs", f"a first start costs nothing beyond its recorded run time (on every side); a restart "
               f"after a move pays {_t(ctx.costs.process_start)} process start and its checkpoint load (per model "
               "family, Gavel's Table 4)", "given" if ctx.costs.process_start != CostModel().process_start else "guessed"),
        Stated("runtime records", "a running job writes one 5 min after its start, then hourly (the simulator's "
               "recorder); the engine learns throughput and restart costs from them", "guessed"),
        Stated("calibration", "b_link/b_net as `hops-slurm calibrate` would measure them on each GPU type", "measured"),
    ]
    if e.offer_file is not None:
        out.append(Stated("offers", "offer_file is set, but offers are not replayed: a new job waits for the monitor "
                          f"step ({_t(e.monitor_interval)}) instead of Slurm's next pass", "config"))
    out.append(Stated("Slurm sides", "slurm-backfill and slurm-multifactor as Slurm runs them: no probes, scheduling at "
                      "each submission and end, with the time limits; first-fit node choice", "guessed"))
    return out


def assumptions_made(jobs: Sequence[HistoryJob], derived: Sequence[Derived], ctx: Context) -> list[Stated]:
    """Every assumption of a what-if, in reading order: the cluster, the jobs, the Hops side."""
    ids = {x.spec.job_id for x in derived}
    replayed = [j for j in jobs if j.job_id in ids]
    return _cluster(replayed, ctx) + _jobs(replayed, derived, ctx) + _hops_side(ctx)


def lines(stated: Sequence[Stated]) -> list[str]:
    counts = Counter(s.mark for s in stated)
    head = ("assumptions (" + ", ".join(f"{counts[m]} {m}" for m in MARKS if counts[m])
            + "; export: read from the export, config: the site's configuration, given: a flag or file, "
            "measured: measured but not on your jobs, guessed: chosen by whatif):")
    return [head, *(printable(s.line(), 400) for s in stated)]


def as_json(stated: Sequence[Stated]) -> list[dict[str, str]]:
    return [{"topic": s.topic, "text": s.text, "mark": s.mark} for s in stated]


__all__ = ["Context", "MARKS", "Mark", "Stated", "assumptions_made", "as_json", "lines"]
