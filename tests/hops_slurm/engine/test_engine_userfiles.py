"""Least privilege without Slurm: per-job places, reading what users wrote, and which records are accepted.

Files are made by root and handed to uid 65534 (``nobody``) as a job owner would own them; the engine
must read only regular files of the owner in the owner's place, without blocking or following links,
and accept only valid records of the job that owns the place.
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest

from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.runtime_records import RUNTIME_FILE, ingest_job
from hops_slurm.engine.profiling import check_probe
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, UnsafeFile, make_place, read_owned
from profiler.records import ProbeResult, RuntimeRecord, parse_record
from profiler.signature import job_signature

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another uid needs root (CI runs as root)")

NOBODY = Owner("nobody", 65534, 65534)


def _as(path: Path, owner: Owner = NOBODY) -> Path:
    os.chown(path, owner.uid, owner.gid, follow_symlinks=False)
    return path


def test_the_place_is_the_owners_and_closed_to_others(tmp_path: Path) -> None:
    place = make_place(tmp_path / "metrics", "42", NOBODY)
    st = place.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o700)
    root = (tmp_path / "metrics").stat()
    assert root.st_uid == 0 and root.st_mode & 0o022 == 0  # nobody else may plant places
    with pytest.raises(UnsafeFile):
        make_place(tmp_path / "metrics", "../etc", NOBODY)


def test_a_regular_file_of_the_owner_is_read_capped(tmp_path: Path) -> None:
    place = make_place(tmp_path / "m", "1", NOBODY)
    (place / "f").write_bytes(b"0123456789")
    _as(place / "f")
    assert read_owned(place, "f", 65534, offset=2, cap=5) == b"23456"
    assert read_owned(place, "missing", 65534) is None


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "other_owner", "hardlink_to_root_file"])
def test_anything_but_the_owners_regular_file_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    place = make_place(tmp_path / "m", "1", NOBODY)
    target = place / "f"
    secret = tmp_path / "secret"
    secret.write_text("root's")
    if kind == "symlink":
        target.symlink_to(secret)
        os.chown(target, 65534, 65534, follow_symlinks=False)
    elif kind == "fifo":
        os.mkfifo(target)
        _as(target)
    elif kind == "directory":
        target.mkdir()
        _as(target)
    elif kind == "other_owner":
        target.write_text("{}")
        _as(target, Owner("x", 65533, 65533))
    else:
        os.link(secret, target)
    result: list[object] = []

    def read() -> None:
        try:
            result.append(read_owned(place, "f", 65534))
        except UnsafeFile as exc:
            result.append(exc)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "reading blocked"
    assert isinstance(result[0], UnsafeFile), result


def test_a_place_that_is_not_the_owners_is_refused(tmp_path: Path) -> None:
    place = make_place(tmp_path / "m", "1", NOBODY)
    (place / "f").write_text("{}")
    _as(place / "f")
    with pytest.raises(UnsafeFile, match="belongs to uid 65534"):
        read_owned(place, "f", 1000)


# ----- runtime records: valid, bounded, and only for the job that owns the place ------------------
def _record(**kw: object) -> dict[str, object]:
    rec = RuntimeRecord(signature="nobody/abc", gpu_type="a100", node="n1", gpus=2, nodes=1, batch_size=8, steps=10,
                        window_seconds=2.0, throughput=80.0, data_times=[0.01] * 10, sync_waits=[], step_times=[0.2] * 10)
    data = json.loads(rec.model_dump_json())
    data.update(kw)
    return data


class _Store:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float | None]] = []

    def add_runtime_samples(self, signature: str, gpu_type: str, node: str, **kw: object) -> None:
        self.rows.append((signature, kw.get("throughput")))  # type: ignore[arg-type]


def test_only_valid_records_of_this_jobs_signature_are_ingested(tmp_path: Path) -> None:
    root = tmp_path / "metrics"
    place = make_place(root, "5", NOBODY)
    lines = [
        _record(),  # accepted
        _record(signature="root/victim"),  # another job's signature: refused
        _record(throughput=1e12, steps=10**9, window_seconds=1.0, batch_size=500, gpus=2),  # 1e12 samples/s
        _record(node="n9"),  # a node the job never ran on
        _record(gpu_type="h100"),  # not the node's type
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    text += '{"kind": "runtime", "throughput": NaN}\n' + "not json\n" + json.dumps(_record(throughput=float("inf"))) + "\n"
    (place / RUNTIME_FILE).write_text(text)
    _as(place / RUNTIME_FILE)
    state = EngineState(tmp_path / "engine.sqlite")
    job = JobState(job_id="5", name="j", user="nobody", directives="", submit_time=0, first_seen=0, last_seen=0,
                   last_state="RUNNING", config={"n1": 2}, signature="nobody/abc")
    store = _Store()
    report = ingest_job(store, state, root, job, {"n1": "a100", "n9": "a100"})
    assert store.rows == [("nobody/abc", 80.0)]
    assert report.accepted == 1 and len(report.refused) == 7, report.refused
    assert any("not this job's" in r for r in report.refused)
    # read again: nothing new, nothing ingested twice
    assert ingest_job(store, state, root, job, {"n1": "a100"}).accepted == 0 and len(store.rows) == 1
    state.close()


def test_records_reject_non_finite_and_absurd_values() -> None:
    for bad in (_record(throughput=math.nan), _record(window_seconds=math.inf), _record(throughput=1e12),
                _record(step_times=[-1.0]), _record(throughput=8000.0)):  # the last disagrees with its steps
        with pytest.raises(ValueError):
            parse_record(json.dumps(bad, allow_nan=True))


def _probe(model: str = "resnet18", batch: int = 8, params: int = 100, gpu: str = "a100", **kw: object) -> ProbeResult:
    values: dict[str, object] = dict(
        model=model, source="entrypoint" if ":" in model else "zoo", size="tiny",
        signature=job_signature(model, params, batch, (3, 8, 8)), gpu_type=gpu, device="cpu", node="n1",
        batch_size=batch, input_shape=(3, 8, 8), params=params, iterations=3, warmup=2, t_data=0.001, t_forward=0.01,
        t_backward=0.02, t_update=0.005, t_iter_observed=0.04, t_wait_observed=0.0, data_samples=[0.001],
        forward_samples=[0.01], backward_samples=[0.02], update_samples=[0.005], pattern=1, pattern_determined=False,
        pattern_margin=0.1, peak_memory_bytes=1, memory_source="process_max_rss", timing="wall_clock_sync", threads=1,
        torch_version="x", probe_seconds=1.0)
    values.update(kw)
    return ProbeResult(**values)  # type: ignore[arg-type]


def test_a_probe_record_is_accepted_only_as_the_probe_the_job_asked_for() -> None:
    d = HopsDirectives.from_canonical("gpus=1 samples=1000 batch-size=8 model=resnet18")
    check_probe(_probe(), d, "a100")
    for bad, why in ((_probe(model="vgg11"), "model"), (_probe(batch=16), "batch size"), (_probe(gpu="v100"), "GPU type"),
                     (_probe(signature="0123456789abcdef"), "signature")):
        with pytest.raises(ValueError, match=why):
            check_probe(bad, d, "a100")
