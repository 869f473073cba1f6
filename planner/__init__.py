"""planner: latency-ratio queue, service window, configurations and the placement ILP.

Pure: takes views of the cluster and the jobs plus parameters, returns a plan and diagnostics.
No Slurm, no wall clock. Used by the engine (live) and the simulator alike.
"""
