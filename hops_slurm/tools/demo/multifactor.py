"""``hops-slurm demo --slurm-priority multifactor``: the demo's Slurm half under the priority a site runs.

Where it sits: :func:`hops_slurm.tools.demo.run.run_demo` asks :func:`demo_spec` for the cluster (the spec with
``accounting = true`` and ``multifactor = true``: slurmdbd + MariaDB, and slurm.conf's
``PriorityType=priority/multifactor`` with the fair-share, age and size weights and the
``PriorityDecayHalfLife`` that :mod:`hops_slurm.tools.minicluster.conf` writes, printed by
:func:`priority_settings`), then, before the Slurm half, :func:`make_accounts` makes one account per
model family of the workload (``gpt2-b.sh`` -> ``gpt2``: a team per model), and each rigid job is
submitted to its family's account (:func:`account_of`), so slurmctld's fair share ranks the teams by
the GPU time each has used, decayed with the half-life, and age breaks ties, as on a site. The Hops half is
unchanged (its queue is its own; ``[planner] fairshare_weight`` of the demo's config is 0).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from hops_slurm.errors import HopsError
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.minicluster.spec import MiniclusterSpec

#: what ``--slurm-priority`` takes: Slurm's default (priority/basic: first come first served, backfill)
#: or priority/multifactor with fair share on an accounting cluster
PRIORITIES = ("backfill", "multifactor")
_ACCOUNT = re.compile(r"[^a-z0-9_]")
MAX_ACCOUNTS = 64


class AccountsError(HopsError):
    """``sacctmgr`` could not make the demo's accounts."""


def demo_spec(spec: MiniclusterSpec, priority: str) -> MiniclusterSpec:
    """The cluster the demo brings up for ``priority`` (``backfill``: ``spec`` as it is)."""
    if priority not in PRIORITIES:
        raise ValueError(f"--slurm-priority must be one of {', '.join(PRIORITIES)}, got {priority!r}")
    if priority == "backfill":
        return spec
    return spec.model_copy(update={"accounting": True, "multifactor": True})


def account_of(name: str) -> str:
    """The account of a workload script (its model family, the name up to its last ``-``):
    ``gpt2-b`` -> ``gpt2``; lower-case letters, digits and ``_`` only, at most 30 characters."""
    family = name.rsplit("-", 1)[0] if "-" in name else name
    return _ACCOUNT.sub("_", family.lower())[:30] or "demo"


def priority_settings(conf_text: str) -> list[str]:
    """The ``Priority*`` lines of a slurm.conf (what the multifactor run was configured with)."""
    return [ln.strip() for ln in conf_text.splitlines() if ln.strip().startswith("Priority")]


def make_accounts(cluster: Minicluster, accounts: Iterable[str], user: str, timeout: float = 60.0) -> list[str]:
    """Add ``accounts`` under root and ``user`` to each; wait until slurmctld has them (slurmdbd tells it
    a moment after ``sacctmgr``). The accounts made, sorted."""
    names = sorted(set(accounts))
    if not names or len(names) > MAX_ACCOUNTS:
        raise AccountsError(f"the demo makes 1 to {MAX_ACCOUNTS} accounts, got {len(names)}")
    for argv in (["sacctmgr", "-i", "add", "account", ",".join(names)],
                 ["sacctmgr", "-i", "add", "user", user, f"Account={','.join(names)}"]):
        proc = cluster.run(argv, check=False)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0 and not any(s in text for s in ("Nothing new added", "Already existing")):
            raise AccountsError(f"{' '.join(argv[:4])}: {text.strip()[:300]}")
    deadline = time.monotonic() + timeout
    while True:
        proc = cluster.run(["scontrol", "show", "assoc_mgr", "flags=assoc", f"users={user}"], check=False)
        known = {a for a in names if f"Account={a} UserName={user}(" in proc.stdout}
        if known == set(names):
            return names
        if time.monotonic() > deadline:
            raise AccountsError(f"slurmctld does not know accounts {', '.join(sorted(set(names) - known))} "
                                f"{timeout:.0f} s after sacctmgr added them")
        time.sleep(1.0)


__all__ = ["PRIORITIES", "AccountsError", "demo_spec", "account_of", "priority_settings", "make_accounts"]
