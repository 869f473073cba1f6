"""Cluster files: the paper's two clusters and clear errors for bad files."""

import pytest

from hops_slurm.errors import ConfigError
from hops_slurm.sim.cluster_spec import load_cluster


def test_paper_64_mirrors_the_physical_cluster():
    spec = load_cluster("paper-64")
    assert spec.total_gpus == 64
    assert len(spec.nodes()) == 10
    assert set(spec.gpu_types) == {"k80", "p100", "v100"}
    assert len(spec.server_kind) == 4
    view = spec.view()
    v100_classes = {n.server_class for n in view.nodes_of_type("v100")}
    assert len(v100_classes) == 2  # same GPU type, two server kinds
    assert view.free_gpus == 64


def test_paper_512_has_five_kinds_three_of_one_type():
    spec = load_cluster("paper-512")
    assert spec.total_gpus == 512
    assert len(spec.nodes()) == 64
    assert len(spec.server_kind) == 5
    assert [k.gpu_type for k in spec.server_kind[2:]] == ["v100"] * 3
    assert len({k.speed for k in spec.server_kind[2:]}) == 3


def test_bad_files_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="known clusters: .*paper-64"):
        load_cluster("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[server_kind]]\nname = "a"\ngpu_type = "h100"\ngpus = 8\ncount = 1\n')
    with pytest.raises(ConfigError, match="h100.*k80"):
        load_cluster(bad)
    bad.write_text('name = "x"\n[[server_kind]]\nname = "a"\ngpu_type = "k80"\ngpus = 0\ncount = 1\n')
    with pytest.raises(ConfigError, match="server_kind.0.gpus"):
        load_cluster(bad)


def test_policies_see_features_not_the_truth(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('name = "c"\n[[server_kind]]\nname = "v100-fast"\ngpu_type = "v100"\ngpus = 4\ncount = 3\n'
                    '[[server_kind]]\nname = "k80-x"\nfeatures = ["k80-box"]\ngpu_type = "k80"\ngpus = 4\ncount = 1\n'
                    '[[degraded]]\nnode = "v100-fast-01"\nspeed = 0.5\n')
    spec = load_cluster(path)
    view = spec.view()
    # no administrator feature: the class is the GPU type; the kind's name and speeds stay hidden
    assert {n.server_class for n in view.nodes_of_type("v100")} == {"v100"}
    assert {n.server_class for n in view.nodes_of_type("k80")} == {"k80-box"}
    speeds = spec.node_speeds()
    assert speeds["v100-fast-01"].speed == 0.5 and speeds["v100-fast-00"].speed == 1.0
    path.write_text(path.read_text().replace('node = "v100-fast-01"', 'node = "v100-fast-09"'))
    with pytest.raises(ConfigError, match="degraded node 'v100-fast-09' is not a node"):
        load_cluster(path)
