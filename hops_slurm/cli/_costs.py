"""The simulator's cost flags, shared by ``hops-slurm simulate`` and ``hops-slurm whatif``: one flag per
default of :class:`hops_slurm.sim.costs.CostModel` (docs/simulator.md says where each default comes from),
so a site can re-calibrate them from its own measurements."""

from __future__ import annotations

import argparse

from hops_slurm.cli._args import bounded_float
from hops_slurm.sim.costs import FAMILIES, CostModel, parse_checkpoint_seconds

DEFAULTS = CostModel()


def _checkpoint_seconds(text: str) -> dict[str, float]:
    try:
        return parse_checkpoint_seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_cost_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("costs of starts, preemptions and restarts (docs/simulator.md)")
    g.add_argument("--process-start-seconds", type=bounded_float(0, 86400), default=DEFAULTS.process_start,
                   help=f"seconds from a job's (re)start to its first progress, without a checkpoint load; a first "
                        f"start pays it too (default {DEFAULTS.process_start:g})")
    g.add_argument("--checkpoint-seconds", type=_checkpoint_seconds, default=None, metavar="S|FAMILY=S,...",
                   help="seconds to write, and again to load, one checkpoint: one number for every model family or "
                        f"FAMILY=S pairs ({', '.join(FAMILIES)}; default per family from Gavel's Table 4: "
                        + ", ".join(f"{f} {s:g}" for f, s in DEFAULTS.checkpoint.items()) + ")")
    g.add_argument("--grace-seconds", type=bounded_float(0, 86400), default=DEFAULTS.grace,
                   help=f"preemption notice: how long a job that ignores it keeps its GPUs (default {DEFAULTS.grace:g})")
    g.add_argument("--checkpoint-interval", type=bounded_float(0, 365 * 86400, low_open=True),
                   default=DEFAULTS.checkpoint_interval,
                   help="seconds of run time between a job's periodic checkpoints, for jobs whose workload row "
                        f"does not say (default {DEFAULTS.checkpoint_interval:g})")
    g.add_argument("--checkpoint-on-notice", type=bounded_float(0, 1), default=DEFAULTS.notice_fraction, metavar="FRACTION",
                   help="share of the jobs (drawn per job id) that checkpoint when given a preemption notice, for "
                        f"jobs whose workload row does not say (default {DEFAULTS.notice_fraction:g}: all)")


def cost_model(args: argparse.Namespace) -> CostModel:
    """The :class:`CostModel` the flags describe."""
    costs = CostModel(process_start=args.process_start_seconds, grace=args.grace_seconds,
                      checkpoint_interval=args.checkpoint_interval, notice_fraction=args.checkpoint_on_notice)
    return costs.with_checkpoint_seconds(args.checkpoint_seconds) if args.checkpoint_seconds else costs
