"""EMULATED profiling probe for ``make demo``: the real probe, its compute times scaled to the emulated GPU.

Where it sits: the demo's site config sets ``engine.probe_python`` to etc/demo/probe-python, so the
daemon's probe jobs run ``probe-python -m profiler.probe ARGS``, which lands here. The real
:mod:`profiler.probe` runs first (the tiny zoo model on CPU); then the forward, backward and update
times of its result (and the free-running iteration time) are scaled by one factor so that their sum equals the emulated one-GPU step of
etc/demo/emulation.toml for the probe's GPU type -- the same speed the demo jobs themselves emulate,
so the estimates the planner uses agree with what the jobs do. Data times are left as measured.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hops_slurm.tools.demo.emulation import Emulation, load_emulation


def scale_probe(record: object, emulation: Emulation) -> object:
    """``record`` (a ProbeResult) with compute times scaled to the emulated step; others unchanged."""
    from profiler.records import ProbeResult

    if not isinstance(record, ProbeResult):
        return record
    target = emulation.one_gpu_step(record.model, record.gpu_type)
    factor = target / record.t_compute
    return record.model_copy(update={
        "t_forward": record.t_forward * factor,
        "t_backward": record.t_backward * factor,
        "t_update": record.t_update * factor,
        "forward_samples": [t * factor for t in record.forward_samples],
        "backward_samples": [t * factor for t in record.backward_samples],
        "update_samples": [t * factor for t in record.update_samples],
        "t_iter_observed": record.t_iter_observed * factor,  # the free-running loop, scaled alike
    })


def main(argv: list[str]) -> int:
    if argv[:2] != ["-m", "profiler.probe"]:
        print(f"probe-python (demo emulation) only runs '-m profiler.probe ...', got {argv[:2]}", file=sys.stderr)
        return 2
    from profiler.probe import main as probe_main
    from profiler.records import read_records, write_record

    args = argv[2:]
    code = probe_main(args)
    if code != 0 or "--out" not in args:
        return code
    out = Path(args[args.index("--out") + 1])
    emulation = load_emulation()
    records = [scale_probe(r, emulation) for r in read_records(out)]
    if len(records) == 1:
        write_record(records[0], out)  # type: ignore[arg-type]
        print(f"probe-python: EMULATED {records[0].gpu_type} compute times written to {out}", file=sys.stderr)  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
