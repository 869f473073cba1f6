"""Entity factors kept up to date record by record (estimator.entity_factors) equal the full GROUP BY."""

from __future__ import annotations

import random
from pathlib import Path

from estimator.entity_factors import EntityFactors
from estimator.store import ThroughputStore


def full(store: ThroughputStore) -> dict[str, float]:
    """The factors read from scratch (a new reader: the whole query)."""
    return EntityFactors().factors(store.db)


def test_incremental_factors_equal_the_full_query(tmp_path: Path) -> None:
    rng = random.Random(3)
    store = ThroughputStore(tmp_path / "s.sqlite")
    servers = [f"n{i}" for i in range(6)]
    sigs = ["a", "b", "c"]
    seen_nonempty = False
    store.put_theory("a", "v100", t_f=0.05, t_b=0.02, t_u=0.01, pattern=1, params=1e6, batch_size=32)
    # read once before any entity row: every later row (and the probe above) comes in by update
    assert store.entity_factors() == {}
    for step in range(300):
        sig, t = rng.choice(sigs), rng.choice(("v100", "k80"))
        if rng.random() < 0.1:
            store.put_theory(sig, t, t_f=rng.uniform(0.01, 0.1), t_b=0.02, t_u=0.01, pattern=1, params=1e6,
                             batch_size=32)
        else:
            gpus = rng.choice((1, 1, 2, 4))
            store.put_entity_throughput(sig, t, rng.choice(servers), gpus=gpus, nodes=1,
                                        throughput=rng.uniform(10, 100))
        got = store.entity_factors()
        assert got == full(store), step
        seen_nonempty = seen_nonempty or bool(got)
    assert seen_nonempty  # the sequence did produce factors (1-GPU ratios and multi-GPU peers)
    store.close()


def test_another_writer_makes_it_read_everything_again(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = ThroughputStore(path)
    store.put_theory("a", "v100", t_f=0.05, t_b=0.02, t_u=0.01, pattern=1, params=1e6, batch_size=32)
    store.put_entity_throughput("a", "v100", "n0", gpus=1, nodes=1, throughput=100.0)
    before = store.entity_factors()
    assert set(before) == {"n0"}
    # a second connection writes a row this store's writes did not touch (as another process would)
    store.db.conn.commit()
    import sqlite3
    other = sqlite3.connect(str(path))
    other.execute("insert into entity_aggregated (signature, gpu_type, gpus, nodes, server, n, total, per_gpu) "
                  "values ('a', 'v100', 1, 1, 'n1', 1, 50.0, 50.0)")
    other.commit()
    other.close()
    after = store.entity_factors()
    assert set(after) == {"n0", "n1"} and after == full(store)
    store.close()
