"""The site's side of Hops: what a running Slurm must have for Hops (``hops-slurm site check``) and how a
site leaves Hops again (``hops-slurm site leave``).

Where it sits: beside the engine, run by the administrator. :mod:`.facts` reads the running Slurm and
the installed hook, :mod:`.check` judges them against the Hops configuration (pure), :mod:`.leave`
hands Hops's jobs and reservations back to Slurm (reusing :mod:`hops_slurm.engine.failopen`).
"""
