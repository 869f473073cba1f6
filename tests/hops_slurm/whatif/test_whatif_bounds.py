"""whatif bounded by its input, not its numbers: the cluster from the export's node lists, one limit on GPUs
per job shared with the records, absurd values refused on their own row, a BOM dropped, escapes neutralised
in every file it writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hops_slurm import directives, limits
from hops_slurm.cli import main
from hops_slurm.errors import HopsError
from hops_slurm.whatif import fields, history
from hops_slurm.whatif.exports import parse_text, read_export, select
from hops_slurm.whatif.replay import MAX_INFERRED_GPUS, infer_cluster
from profiler import records
from tests_paths import DATA

T0 = 1_767_225_600
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")


def export(rows: list[dict[str, object]]) -> str:
    return json.dumps({"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": rows})


def row(i: int, gpus: int, start: int, end: int, nodes: str | None = None, user: str = "u") -> dict[str, object]:
    r: dict[str, object] = {"job_id": i, "name": f"j{i}", "user": user, "partition": "gpu", "state": {"current": "COMPLETED"},
                            "time": {"submission": T0 + start, "start": T0 + start, "end": T0 + end},
                            "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": gpus}]}}
    if nodes is not None:
        r["nodes"] = nodes
    return r


def test_one_limit_on_gpus_per_job_for_the_grammar_the_records_and_whatif() -> None:
    assert history.MAX_JOB_GPUS == records.MAX_GPUS == directives.MAX_GPUS == limits.MAX_JOB_GPUS
    r = parse_text(export([row(1, limits.MAX_JOB_GPUS + 1, 0, 60), row(2, limits.MAX_JOB_GPUS, 0, 60, "n[1-128]")]))
    assert [j.job_id for j in r.jobs] == ["2"]
    assert r.problems[0].where == "jobs[0] (job 1)" and f"outside 0..{limits.MAX_JOB_GPUS}" in r.problems[0].message


def test_the_cluster_is_the_nodes_the_export_names_with_the_gpus_held_there_at_once() -> None:
    rows = [row(i, 1, 0, 600, "g1") for i in range(1, 9)]  # eight 1-GPU jobs at once on g1: g1 has 8 GPUs
    rows += [row(9, 8, 0, 600, "g[2-3]"), row(10, 2, 700, 800, "g2")]  # 4 per node on g2 and g3
    cluster = infer_cluster(select(parse_text(export(rows))).jobs)
    kinds = {(k.gpus, k.count) for k in cluster.server_kind}
    assert cluster.total_gpus == 16 and kinds == {(8, 1), (4, 2)}
    recorded = infer_cluster(select(read_export(DATA / "sacct" / "22.05" / "sacct.json")).jobs)
    assert recorded.total_gpus == 8  # the capture cluster: g1 and g2, 4 GPUs each


def test_an_inferred_cluster_past_the_bound_is_one_line_before_any_simulation(capsys: pytest.CaptureFixture[str],
                                                                              tmp_path: Path) -> None:
    overlapping = [row(i, 1024, i, 3600 + i) for i in range(40)]  # no node lists: the peak is 40,960 GPUs
    with pytest.raises(HopsError, match=f"held 40960 GPUs at once.*larger than whatif infers \\({MAX_INFERRED_GPUS} GPUs"):
        infer_cluster(select(parse_text(export(overlapping))).jobs)
    spread = [row(i, 1024, i, 3600 + i, f"n[{i * 1024 + 1}-{i * 1024 + 1024}]") for i in range(5)]
    with pytest.raises(HopsError, match="more than 4096 nodes named"):
        infer_cluster(select(parse_text(export(spread))).jobs)
    path = tmp_path / "big.json"
    path.write_text(export(overlapping))
    assert main(["whatif", str(path)]) == 1
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if "error:" in ln] == [err.strip()], err


def test_absurd_values_fail_their_own_row() -> None:
    text = export([row(1, 2, 0, 60, "n1"), row(2, 2, 0, 60, "n2"), row(3, 128, 0, 60, "n3"), row(4, 2, 0, 60, "n[9-1]"),
                   row(5, 2, 0, 60, "n[1-99999]")])
    text = text.replace(f'"submission": {T0 + 0}, "start": {T0}, "end": {T0 + 60}}}, "tres": {{"allocated": [{{"type": "gres", '
                        '"name": "gpu", "count": 2}]}, "nodes": "n2"',
                        f'"submission": {"9" * 5000}, "start": {T0}, "end": {T0 + 60}}}, "tres": {{"allocated": [{{"type": '
                        '"gres", "name": "gpu", "count": 2}]}, "nodes": "n2"', 1)
    r = parse_text(text)
    assert [j.job_id for j in r.jobs] == ["1"]
    by_where = {p.where: p.message for p in r.problems}
    assert by_where["jobs[1] (job 2)"] == "submission time is a number of 5000 digits (at most 20)"
    assert by_where["jobs[2] (job 3)"] == "128 GPUs on 1 node(s): more than 64 GPUs per node"
    assert "'9-1' is not a range" in by_where["jobs[3] (job 4)"]
    assert "names more than 1024 nodes" in by_where["jobs[4] (job 5)"]
    assert fields.json_int("1" * 21).__class__ is fields.Oversized


@pytest.mark.parametrize("name", ["sacct.json", "sacct-parsable2.txt"])
def test_a_byte_order_mark_is_dropped(name: str, tmp_path: Path) -> None:
    original = DATA / "sacct" / "22.05" / name
    marked = tmp_path / name
    marked.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
    plain, bom = read_export(original), read_export(marked)
    assert bom.source == plain.source and bom.jobs == plain.jobs and bom.problems == plain.problems


def test_no_file_whatif_writes_holds_a_raw_control_character(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = ["\x1b[31mred", "a\u202ebidi", "c1\x9b", "del\x7f", "bell\x07", "line\u2028sep", "cr\rx"]
    rows = [row(i + 1, 1, 10 * i, 10 * i + 60, f"g{i % 2 + 1}", user=u) for i, u in enumerate(hostile)]
    for r, text in zip(rows, hostile):
        r["name"] = text
    rows[0]["comment"] = {"administrator": "gpus=1 " + hostile[0]}  # not a #HOPS form: its row's problem line
    path = tmp_path / "hostile.json"
    path.write_text(export(rows))
    out = tmp_path / "out"
    main(["whatif", str(path), "--round-seconds", "30", "--refresh-seconds", "5", "--out", str(out)])
    printed = capsys.readouterr()
    assert not RAW.search(printed.out + printed.err)
    written = [p for p in out.rglob("*") if p.is_file() and p.suffix != ".png"]
    assert {p.name for p in written} >= {"workload.csv", "results.md", "summary.json", "problems.txt", "cluster.toml",
                                         "jobs.jsonl"}
    for p in written:
        text = p.read_text(encoding="utf-8")
        assert not RAW.search(text), (p.name, RAW.search(text))
    assert "a\\u202ebidi" in (out / "workload.csv").read_text()  # escaped, visible
    jobs = [json.loads(ln) for ln in (out / "slurm-recorded" / "jobs.jsonl").read_text().splitlines()]
    assert {j["user"] for j in jobs} <= set(hostile)  # escaped in the file, the same text when read back
