"""The code both backends share: the live engine (:mod:`hops_slurm.engine`) and the simulator
(:mod:`hops_slurm.sim`) run the same rounds over the same narrow interface.

Where it sits: below ``engine/`` and ``sim/``, above ``planner/`` and ``estimator/``; it imports from
neither backend (tests/test_structure.py checks).

- :mod:`hops_slurm.core.interface`: the :class:`~hops_slurm.core.interface.Backend` protocol a cluster
  implements, live or simulated, and one planning (:func:`~hops_slurm.core.interface.plan_once`).
- :mod:`hops_slurm.core.rounds`: the round schedule (a plan, then fragment plans at the same instant) and
  the loop the simulator runs on its virtual clock.
- :mod:`hops_slurm.core.jobview`: what is known of a job -> the :class:`planner.views.JobView` a policy
  plans with (estimate, planning age, sensitivity).
- :mod:`hops_slurm.core.ledger`: per-job accounting (wait, run time, GPU-seconds, placements).
- :mod:`hops_slurm.core.processed`: a job's processed samples and restart costs from its runs.
"""
