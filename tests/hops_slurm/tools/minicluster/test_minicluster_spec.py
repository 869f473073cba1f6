"""Minicluster spec validation and the rendered slurm.conf/gres.conf (no daemons needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.errors import MiniclusterError
from hops_slurm.tools.minicluster import conf
from hops_slurm.tools.minicluster.spec import MiniclusterSpec, load_spec


def test_default_spec_is_the_documented_cluster() -> None:
    spec = load_spec()
    assert spec.node_names() == ["a100-1", "a100-2", "v100-1", "v100-2"]
    assert [(g.gpu_type, g.gpus) for g in spec.nodes] == [("a100", 8), ("v100", 4)]
    assert {p.name for p in spec.partitions} == {"hops", "profiler"}


def test_rendered_conf_has_one_port_per_node_and_fake_gpus() -> None:
    spec = load_spec()
    text = conf.render_slurm_conf(spec, "myhost", job_submit_lua=True)
    assert "SlurmctldHost=myhost" in text
    assert "NodeName=a100-2 NodeAddr=127.0.0.1 NodeHostname=myhost Port=17002" in text
    assert "Gres=gpu:a100:8" in text and "Gres=gpu:v100:4" in text
    assert "JobSubmitPlugins=lua" in text
    assert "SlurmdParameters=config_overrides" in text and "DefMemPerCPU=1000" in text
    gres = conf.render_gres_conf(spec)
    assert gres.count("NodeName=v100-1 Name=gpu Type=v100") == 4
    assert "AutoDetect=off" in gres


def test_bad_spec_names_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        '[[nodes]]\nprefix = "A_"\ncount = 1\ngpu_type = "x"\ngpus = 40\n'
        '[[partitions]]\nname = "p"\nnodes = ["nope"]\n'
    )
    with pytest.raises(MiniclusterError) as err:
        load_spec(path)
    assert "nodes.0.prefix" in str(err.value)
    assert "nodes.0.gpus" in str(err.value)


def test_partition_must_name_known_nodes() -> None:
    with pytest.raises(ValueError, match="partitions.0.nodes"):
        MiniclusterSpec.model_validate(
            {"nodes": [{"prefix": "n", "count": 1, "gpu_type": "a", "gpus": 1}], "partitions": [{"name": "p", "nodes": ["zz"]}]}
        )


def test_max_job_count_is_written_only_when_set() -> None:
    plain = load_spec()
    assert plain.max_job_count is None
    assert "MaxJobCount" not in conf.render_slurm_conf(plain, "myhost")
    raised = load_spec(Path(__file__).resolve().parents[4] / "etc" / "minicluster" / "load.toml")
    assert raised.max_job_count == 20000
    assert "MaxJobCount=20000\n" in conf.render_slurm_conf(raised, "myhost")


def test_max_job_count_below_a_usable_queue_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('max_job_count = 10\n[[nodes]]\nprefix = "n"\ncount = 1\ngpu_type = "a100"\ngpus = 1\n'
                    '[[partitions]]\nname = "hops"\n')
    with pytest.raises(MiniclusterError, match="max_job_count"):
        load_spec(spec)
