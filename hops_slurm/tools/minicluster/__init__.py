"""A real multi-node fake-GPU Slurm cluster on one host: spec, config rendering, daemons by PID."""
