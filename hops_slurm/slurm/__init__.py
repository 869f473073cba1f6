"""Slurm backends: read jobs, nodes and GPU use; enact plans (hold, place, release, requeue, reservations)."""
