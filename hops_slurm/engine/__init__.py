"""The live Hops engine on Slurm: daemon, rounds, profiling flow, bookkeeping (see engine.py)."""
