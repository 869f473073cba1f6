"""``hops-slurm whatif``: replay a site's own Slurm job history in the simulator.

Data flow: a ``sacct --json`` or ``sacct --parsable2`` export -> :mod:`.exports` (:mod:`.read_json`,
:mod:`.read_parsable2`: one :class:`.history.HistoryJob` per job, one :class:`.history.Problem` per bad
row) -> :mod:`.assumptions` (a simulator job spec per job: from its ``#HOPS`` admin comment, else from
documented assumptions a TOML file overrides) -> :mod:`.replay` (what Slurm did, as recorded; Slurm's
policies through :func:`hops_slurm.sim.runner.simulate`; Hops through the production engine with the
site's configuration, :func:`hops_slurm.sim.engine_run.simulate_engine`) -> :mod:`.output` (the
side-by-side table in sacct's output conventions, JSON, plots), :mod:`.disclosure` (every assumption,
marked by where it came from) and :mod:`.verdict` (is Hops ahead on avg JCT; if not, why). See
docs/whatif.md.
"""
