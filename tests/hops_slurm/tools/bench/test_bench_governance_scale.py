"""hops_slurm.tools.bench.governance_scale: the generated site is what the bench says it is (issue 34, M4).

The bench times the limits of a planning; a site whose rows did not read would time blocked jobs instead.
"""

from __future__ import annotations

from hops_slurm.slurm.assoc import parse_assoc, parse_qos
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.partitions import parse_partitions
from hops_slurm.tools.bench.governance_scale import deep_tree, listing, site_text


def test_the_generated_site_reads_whole_and_limits_every_job() -> None:
    assoc_text, qos_text, parts_text = site_text()
    assoc, qos = parse_assoc(assoc_text), parse_qos(qos_text)
    problems: list[str] = []
    parts = parse_partitions(parts_text, problems)
    assert len(assoc) >= 20_000 and not [a for a in assoc if a.unreadable]
    assert not [q for q in qos.values() if q.unreadable] and not problems and set(parts) == {"hops", "plain"}
    gov = Governance(tuple(assoc), qos, partitions=parts)
    users = [(a.account, a.user) for a in assoc if a.user][::4]
    jobs = listing(1000, users, 100, qos=False)
    limits = limits_for(gov, jobs)
    assert not limits.blocked
    capped = set().union(*(c.jobs for c in limits.caps))
    assert capped == {j.job_id for j in jobs}  # every job under its account's limits
    assert len(deep_tree().account_chain("d999")) == 100
