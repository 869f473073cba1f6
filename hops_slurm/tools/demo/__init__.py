"""The ``make demo`` workload: the driver (:mod:`.run`) and the GPU-speed emulation of its jobs (:mod:`.emulation`)."""

from hops_slurm.tools.demo.run import run_demo

__all__ = ["run_demo"]
