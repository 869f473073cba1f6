"""Sweeps (``hops-slurm simulate`` and ``bench`` over workloads, policies and seeds) run as the tasks of a
Slurm job array: :mod:`.job_array` submits and follows the array, :mod:`.sim_cells` runs one simulation
cell and merges the cells into the local run's result, :mod:`.bench_cells` cuts a benchmark run into tasks
(one per benchmark or per part) and assembles a benchmark's parts into its document."""
