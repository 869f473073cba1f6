"""The discrete-event simulator: clusters, ground truth, workloads, the simulated backend and metrics.

Data flow: cluster file + workload -> SimBackend (virtual clock, ground truth) <-> round loop <-> policy
-> JobRecord / RoundRecord JSONL -> metrics -> Markdown, JSON and plots (``hops-slurm simulate``).
"""
