"""``hops-slurm whatif``: replay a site's own Slurm job history in the simulator.

Data flow: a ``sacct --json`` or ``sacct --parsable2`` export -> :mod:`.exports` (:mod:`.read_json`,
:mod:`.read_parsable2`: one :class:`.history.HistoryJob` per job, one :class:`.history.Problem` per bad
row) -> :mod:`.assumptions` (a simulator job spec per job: from its ``#HOPS`` admin comment, else from
documented assumptions a TOML file overrides) -> :mod:`.replay` (what Slurm did, as recorded, and the
simulator's runs of Slurm backfill and Hops through :func:`hops_slurm.sim.runner.simulate`) ->
:mod:`.output` (the side-by-side table in sacct's output conventions, JSON, plots). See docs/whatif.md.
"""
