"""Tooling around the daemon, never part of it: benchmarks, the demonstration, the local Slurm cluster.

Where it sits: above everything else of hops_slurm/ and beside the CLI, which runs it
(``hops-slurm bench|demo|minicluster``). The daemon's modules (``engine/``, ``slurm/``, ``core/``, the
top-level modules) and the simulator, report and what-if never import from here (tests/test_structure.py
checks), so a site installs and runs the scheduler without them.

- :mod:`hops_slurm.tools.bench`: the benchmarks (speed and accuracy goals; results under docs/results/).
- :mod:`hops_slurm.tools.demo`: ``make demo``, Hops beside Slurm's backfill on a minicluster.
- :mod:`hops_slurm.tools.minicluster`: a real multi-node fake-GPU Slurm cluster on one host.
- :mod:`hops_slurm.tools.slurm_latency`: what each Slurm command the engine enacts with costs.
- :mod:`hops_slurm.tools.results_header`: the first line of every results document (generator, command,
  commit, date, where it ran), written by the benchmarks and checked by tests/test_results_documents.py.
- :mod:`hops_slurm.tools.sweep`: ``simulate`` and ``bench`` with ``--on-slurm``, as the tasks of a Slurm job array.
"""
