"""Importers for workloads and clusters published by others (docs/traces.md).

Data flow: ``--workload sia:PATH`` / ``alibaba:PATH`` and ``--cluster alibaba:NODE_CSV`` ->
:mod:`hops_slurm.sim.traces.specs` -> :mod:`.sia` (Sia's workload CSV + throughput profiles, read by
:mod:`.sia_profiles`) or :mod:`.alibaba` (Alibaba's GPU trace v2023 pod and node lists) -> the
simulator's own :class:`hops_slurm.sim.workload.JobSpec` and :class:`hops_slurm.sim.cluster_spec.ClusterSpec`,
plus the assumptions each import made (:class:`hops_slurm.sim.traces.rows.Imported`); any workload may
then be replayed faster or in a window of its arrivals (:mod:`.timescale`).
"""
