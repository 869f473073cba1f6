"""Coexisting with the site's tools that write a job's AdminComment (Princeton's jobstats, for one).

Where it sits: between Slurm's listing and everything the engine derives from it. The submit hook keeps
a job's canonical ``#HOPS`` form in AdminComment (:mod:`hops_slurm.directives`), and the engine copies it
into its own store (``engine.sqlite``, :class:`hops_slurm.engine.state.JobState.directives`) the first
time it sees the job; from then on the engine's copy is the job's truth. A tool that replaces the
AdminComment of a running job (jobstats writes its summary there) must change nothing: every snapshot
the live backend keeps (:meth:`hops_slurm.engine.live_backend.SlurmBackend.keep`) gets, for each job the
engine tracks whose AdminComment no longer carries the ``#HOPS`` form, that form back from the store
(:func:`restore_directives`), so the job still counts as a Hops job (its GPUs re-planned, its placement
environment written from its directives, reconciliation) and the plan and the report are what they
would have been. Slurm's own AdminComment is left as the other tool wrote it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.snapshot import Snapshot


def restore_directives(snap: Snapshot, stored: Mapping[str, str]) -> Snapshot:
    """``snap`` with the stored canonical directives (job id -> text) of each tracked job whose
    AdminComment lost them; ``snap`` itself when none did."""
    if not stored:
        return snap
    jobs: list[SlurmJob] = []
    changed = False
    for job in snap.jobs:
        text = stored.get(job.job_id)
        if text and not job.is_hops:
            jobs.append(job.model_copy(update={"admin_comment": COMMENT_PREFIX + text}))
            changed = True
        else:
            jobs.append(job)
    return dataclasses.replace(snap, jobs=tuple(jobs)) if changed else snap
