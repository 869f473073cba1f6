"""hops-slurm: the Hops GPU scheduler (SoCC '24) on Slurm.

Top of the data flow (see README): users' ``#HOPS`` directives enter through the submit hook,
the engine reads Slurm, asks ``estimator`` and ``planner`` for a plan, and enacts it with scontrol.
This package holds the Slurm-facing parts: CLI, site config, directives, minicluster, engine.
"""

__version__ = "0.1.0"
