"""The job cache of the CLI backend (:class:`hops_slurm.slurm.read_common.JobCache`): a listing's job whose
record is unchanged since the last listing is the job read then; any change to a field the reader reads
gives a new job; a record that is not an object Slurm writes is read (and refused) as before."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hops_slurm.slurm.api import SlurmError
from hops_slurm.slurm.dialect import DIALECTS
from hops_slurm.slurm.read_common import JOB_FIELDS, JobCache
from hops_slurm.slurm import read_data_parser, read_v0038
from tests_paths import DATA

LISTING_2205 = json.loads((DATA / "slurm-output" / "22.05" / "squeue.json").read_text())
LISTING_2411 = json.loads((DATA / "slurm-output" / "24.11" / "scontrol-show-job.json").read_text())


class Reading(dict):  # type: ignore[type-arg]
    """A job record that notes every key read from it."""

    read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        Reading.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        Reading.read.add(key)
        return super().__getitem__(key)


@pytest.mark.parametrize("reader, listing", [(read_v0038.job, LISTING_2205), (read_data_parser.job, LISTING_2411)])
def test_the_cache_key_holds_every_field_the_reader_reads(reader: Any, listing: dict[str, Any]) -> None:
    Reading.read = set()
    for record in listing["jobs"]:
        reader(Reading(record))
    assert Reading.read and Reading.read <= set(JOB_FIELDS)


def _text(listing: dict[str, Any]) -> str:
    return json.dumps(listing)


@pytest.mark.parametrize("release, listing", [("22.05", LISTING_2205), ("24.11", LISTING_2411)])
def test_an_unchanged_job_is_the_job_read_before_and_a_changed_one_is_read_again(release: str, listing: dict[str, Any]) -> None:
    dialect, cache = DIALECTS[release], JobCache()
    first = dialect.jobs(_text(listing), cache)
    assert first == dialect.jobs(_text(listing))  # the same jobs as without a cache
    changed = copy.deepcopy(listing)
    changed["jobs"][0]["comment"] = "edited by its owner"
    gone = changed["jobs"].pop()
    second = dialect.jobs(_text(changed), cache)
    assert cache.reused == len(second) - 1
    assert second[0].comment == "edited by its owner" and second[0] is not first[0]
    assert all(a is b for a, b in zip(first[1:], second[1:]))  # unchanged: not read again
    assert str(gone["job_id"]) not in {j.job_id for j in second}
    changed["jobs"].append(gone)  # back: read again (the cache holds only the last listing's jobs)
    third = dialect.jobs(_text(changed), cache)
    assert third[-1] == first[-1] and cache.reused == len(third) - 1


def test_a_bad_record_is_refused_with_or_without_the_cache() -> None:
    bad = copy.deepcopy(LISTING_2205)
    del bad["jobs"][1]["job_state"]  # a record without its state: the listing is refused
    cache = JobCache()
    DIALECTS["22.05"].jobs(_text(LISTING_2205), cache)
    with pytest.raises(SlurmError):
        DIALECTS["22.05"].jobs(_text(bad), cache)
    odd = copy.deepcopy(LISTING_2205)
    odd["jobs"][0]["job_id"] = [1]  # not an id Slurm writes: read (never cached), as the reader reads it
    assert [j.job_id for j in DIALECTS["22.05"].jobs(_text(odd), JobCache())][0] == "[1]"
