"""The submit hook refuses users asking for the engine's reservations (hops-gate, hops-offer, hops-j<job>,
hops-p<job>) wherever they stand in Slurm's comma list (Slurm splits on "," and skips empty names:
``,hops-offer`` and ``maint,hops-offer`` reach hops-offer), at submission and by ``scontrol update``, Hops
job or not, and lets root (the engine) use them (issue 34, H1). An owner may not edit the engine's fields of
a pending Hops job. Lua 5.1 with a stand-in for the plugin's ``slurm`` table (tests/hooks/luahook.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from luahook import hops_script, install, run

CASE = """
local r = arg[2] ~= "" and arg[2] or nil
local uid = tonumber(arg[3])
local plain = { reservation = r, script = "#!/bin/sh\\ntrue\\n" }
local hops = { reservation = r, script = %s }
print(H.job_submit(plain, {}, uid), H.job_submit(hops, {}, uid), H.job_modify({ reservation = r }, { job_state = 1 }, {}, uid))
""" % hops_script()


@pytest.mark.parametrize("reservation", [
    "hops-j12", "hops-gate", "hops-p7", "hops-offer", ",hops-offer", "maint,hops-offer", "maint, hops-offer",
    "maint,,hops-j3", "HOPS-offer", "maint,\thops-gate", " hops-offer", "hops-offer,", "a,b,c,hops-p1,d",
])
def test_users_cannot_name_an_engine_reservation_anywhere_in_the_list(tmp_path: Path, reservation: str) -> None:
    out = run(install(tmp_path), CASE, reservation, "1000")
    assert out.stdout.split() == ["-1", "-1", "-1"]
    assert "belongs to the Hops engine" in out.stderr


@pytest.mark.parametrize(("reservation", "uid", "expected"), [
    ("hops-j12", "0", ["0", "0", "0"]),  # the engine (root)
    (",hops-offer", "0", ["0", "0", "0"]),
    ("maintenance", "1000", ["0", "0", "0"]),
    ("myhops-x,site-hops", "1000", ["0", "0", "0"]),  # the site's own names that merely contain "hops"
    ("", "1000", ["0", "0", "0"]),
])
def test_others_pass(tmp_path: Path, reservation: str, uid: str, expected: list[str]) -> None:
    assert run(install(tmp_path), CASE, reservation, uid).stdout.split() == expected


EDIT = """
local field, value, state, ac, uid = arg[2], arg[3], tonumber(arg[4]), arg[5], tonumber(arg[6])
local desc = {}
desc[field] = tonumber(value) or value
print(H.job_modify(desc, { admin_comment = ac ~= "" and ac or nil, job_state = state, job_id = 7 }, {}, uid))
"""


@pytest.mark.parametrize(("field", "value"), [
    ("tres_per_node", "gres/gpu:8"), ("tres_per_job", "gres:gpu:4"), ("req_nodes", "a100-1"), ("req_nodes", ""),
    ("min_nodes", "2"), ("features", "a100"), ("partition", "gpu"), ("reservation", "maint"), ("shared", "0"),
])
def test_owner_edits_of_a_pending_hops_job_s_engine_fields_are_refused(tmp_path: Path, field: str, value: str) -> None:
    out = run(install(tmp_path), EDIT, field, value, "0", "hops:gpus=1 samples=1 batch-size=1 model=x", "1000")
    assert out.stdout.split() == ["-1"] and "is the Hops engine's to set" in out.stderr


@pytest.mark.parametrize(("field", "value", "state", "comment", "uid"), [
    ("tres_per_node", "gres/gpu:8", "1", "hops:gpus=1", "1000"),  # running: Slurm's own rules apply
    ("tres_per_node", "gres/gpu:8", "0", "", "1000"),  # not a Hops job
    ("tres_per_node", "gres/gpu:8", "0", "hops:gpus=1", "0"),  # the engine
    ("min_nodes", "4294967294", "0", "hops:gpus=1", "1000"),  # NO_VAL: not part of the edit
    ("time_limit", "60", "0", "hops:gpus=1", "1000"),  # the owner's to change
])
def test_other_edits_pass(tmp_path: Path, field: str, value: str, state: str, comment: str, uid: str) -> None:
    assert run(install(tmp_path), EDIT, field, value, state, comment, uid).stdout.split() == ["0"]


FORGED = """
local uid = tonumber(arg[2])
local ac = arg[3]
local plain = { admin_comment = ac, script = "#!/bin/sh\\ntrue\\n", partition = "hops" }
local hops = { admin_comment = ac, script = %s }
print(H.job_submit(plain, {}, uid), H.job_submit(hops, {}, uid), H.job_modify({ admin_comment = ac }, { job_state = 0 }, {}, uid),
      tostring(hops.admin_comment))
""" % hops_script()


@pytest.mark.parametrize(("uid", "comment", "expected"), [
    ("1000", "hops:gpus=8 samples=1K batch-size=8 model=resnet18", ["-1", "-1", "-1"]),  # forged: refused
    ("1000", "hops:", ["-1", "-1", "-1"]),
    ("0", "hops:gpus=8 samples=1K batch-size=8 model=resnet18", ["0", "0", "0"]),  # root (the engine, an admin)
    ("1000", "site note", ["0", "0", "0"]),  # anything else is not the hook's business
    ("1000", " hops:x", ["0", "0", "0"]),  # the engine reads the prefix only at the start
])
def test_a_user_cannot_bring_an_admin_comment_of_the_engines_form(tmp_path: Path, uid: str, comment: str,
                                                                  expected: list[str]) -> None:
    """The engine takes a job whose admin_comment starts with ``hops:`` for a Hops job the hook checked;
    Slurm's clients cannot set it, but a hand-made request (libslurm, a REST client) could: refused."""
    out = run(install(tmp_path), FORGED, uid, comment).stdout.split()
    assert out[:3] == expected
    if expected[1] == "0":
        assert out[3] == "hops:gpus=1,2,4"  # a Hops job's admin_comment is the hook's canonical line


def test_a_forged_admin_comment_is_refused_even_when_the_grammar_did_not_load(tmp_path: Path) -> None:
    where = install(tmp_path, files=("hops_submit.lua",))  # no hops_directives.lua beside it
    out = run(where, """
print(H.job_submit({ admin_comment = "hops:gpus=8", script = "#!/bin/sh\\ntrue\\n" }, {}, 1000),
      H.job_submit({ script = "#!/bin/sh\\ntrue\\n" }, {}, 1000))
""")
    assert out.stdout.split() == ["-1", "0"]
