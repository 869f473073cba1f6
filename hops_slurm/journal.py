"""The enactment journal: every action the engine means to take on Slurm, written before it is taken.

Where it sits: :mod:`hops_slurm.slurm.enact` wraps each Slurm operation (hold, place, reserve, env,
release, requeuehold, detach, unreserve) in :meth:`Journal.action` (one action) or :meth:`Journal.phase`
(the same kind of action for many jobs: every intent written in one transaction, then the operations,
then every outcome in one transaction), which writes the intent to SQLite, runs the operation, then
marks it ``done`` (or ``failed`` with Slurm's message). A crash (SIGKILL,
power loss) leaves the action ``intended``; on start the engine calls
:func:`hops_slurm.slurm.reconcile.reconcile`, which marks those ``interrupted`` (:meth:`Journal.mark_interrupted`)
and repairs Slurm's state: no job lost, none left released outside its reservation, no stray reservation. The journal also keeps
the allocations that actually started (GPU indices per node), as read back from Slurm.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

INTENDED, DONE, FAILED, INTERRUPTED = "intended", "done", "failed", "interrupted"


@dataclass(frozen=True)
class Action:
    id: int
    round_id: str
    job_id: str
    kind: str
    args: dict[str, Any]
    status: str
    error: str
    created: float
    finished: float | None


@dataclass
class Phase:
    """The actions of one :meth:`Journal.phase`: job id -> action id, and the jobs whose action failed
    (job id -> why). The phase's body calls :meth:`failed` for each job whose operation failed; the others
    are marked done when the body ends."""

    ids: dict[str, int]
    errors: dict[str, str] = field(default_factory=dict)

    def failed(self, job_id: str, error: str) -> None:
        self.errors[str(job_id)] = error

    @property
    def done(self) -> list[str]:
        return [j for j in self.ids if j not in self.errors]


class Journal:
    """SQLite journal at ``path`` (created if missing; ``":memory:"`` for a throwaway one); ``read_only``:
    an existing journal read through a read-only URI (``plan --dry-run``), nothing created or written."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = str(path)
        self.clock: Callable[[], float] = time.time  # the engine sets Slurm's (virtual in a simulation)
        self._read_only = read_only
        self._started: tuple[int, dict[tuple[str, str], float | None]] | None = None  # last_started's answers
        if read_only:
            from estimator.store import read_only_uri

            self.db = sqlite_utils.Database(sqlite3.connect(read_only_uri(self.path), uri=True))
            self.db.execute("PRAGMA query_only = 1")
            return
        self.db = sqlite_utils.Database(self.path) if self.path != ":memory:" else sqlite_utils.Database(memory=True)
        self.db.execute("PRAGMA journal_mode=WAL") if self.path != ":memory:" else None
        if "actions" not in self.db.table_names():
            self.db["actions"].create(
                {"id": int, "round_id": str, "job_id": str, "kind": str, "args": str, "status": str,
                 "error": str, "created": float, "finished": float},
                pk="id",
            )
            self.db["actions"].create_index(["status"])
            self.db["actions"].create_index(["job_id"])
        # a job's latest action of a kind (last_done, last_started: several per job per refresh)
        self.db.execute("CREATE INDEX IF NOT EXISTS actions_job_kind ON actions (job_id, kind, id)")
        if "allocations" not in self.db.table_names():
            self.db["allocations"].create(
                {"id": int, "round_id": str, "job_id": str, "planned": str, "actual": str, "matched": int, "at": float},
                pk="id",
            )

    # ----- writing ------------------------------------------------------------------------------
    #: transactions committed by this connection (``tests/hops_slurm/engine/standin_timing.py`` counts them)
    commits = 0

    def intend(self, kind: str, job_id: str, args: Mapping[str, Any] | None = None, round_id: str = "") -> int:
        return self.intend_all([(kind, job_id, args)], round_id)[0]

    def intend_all(self, items: Sequence[tuple[str, str, Mapping[str, Any] | None]], round_id: str = "") -> list[int]:
        """Journal the intent of each ``(kind, job_id, args)`` in one transaction, committed before any of
        them runs; their action ids in the same order."""
        now = self.clock()
        rows = [(round_id, str(job_id), kind, json.dumps(dict(args or {}), sort_keys=True), INTENDED, "", now)
                for kind, job_id, args in items]
        ids = []
        with self.db.conn:
            for row in rows:
                cur = self.db.conn.execute("insert into actions (round_id, job_id, kind, args, status, error, created) "
                                           "values (?, ?, ?, ?, ?, ?, ?)", row)
                ids.append(int(cur.lastrowid or 0))
        self.commits += 1
        return ids

    def finish(self, action_id: int, status: str = DONE, error: str = "") -> None:
        self.finish_all({action_id: (status, error)})

    def finish_all(self, outcomes: Mapping[int, tuple[str, str]]) -> None:
        """Mark each action ``id -> (status, error)`` in one transaction."""
        if not outcomes:
            return
        now = self.clock()
        with self.db.conn:
            self.db.conn.executemany("update actions set status = ?, error = ?, finished = ? where id = ?",
                                     [(st, err, now, i) for i, (st, err) in outcomes.items()])
        self.commits += 1

    @contextmanager
    def phase(self, kind: str, items: Sequence[tuple[str, Mapping[str, Any] | None]], round_id: str = "") -> Iterator[Phase]:
        """One phase of an enactment: the ``kind`` action for each ``(job_id, args)`` (each job once).
        Every intent is committed in one transaction before the body runs; the body carries them out and
        calls :meth:`Phase.failed` for each one that failed; then every outcome is committed in one
        transaction. An Exception from the body marks the actions not yet failed ``failed`` too and
        propagates; anything else (a kill) leaves them all ``intended`` for the reconcile, exactly like
        a crash between an action and its mark (:meth:`action`)."""
        jobs = [str(j) for j, _a in items]
        if len(set(jobs)) != len(jobs):
            raise ValueError(f"a journal phase names each job once ({kind}: {jobs})")
        ph = Phase(dict(zip(jobs, self.intend_all([(kind, j, a) for j, a in items], round_id))))
        try:
            yield ph
        except Exception as exc:
            self.finish_all({i: (FAILED, ph.errors.get(j, str(exc))) for j, i in ph.ids.items()})
            raise
        self.finish_all({i: (FAILED, ph.errors[j]) if j in ph.errors else (DONE, "") for j, i in ph.ids.items()})

    @contextmanager
    def action(self, kind: str, job_id: str, args: Mapping[str, Any] | None = None, round_id: str = "") -> Iterator[int]:
        """Journal the intent, run the body, mark it done; an Exception marks it failed and propagates.
        Anything else (KeyboardInterrupt, SystemExit, a kill) leaves it ``intended`` for :meth:`reconcile`."""
        action_id = self.intend(kind, job_id, args, round_id)
        try:
            yield action_id
        except Exception as exc:
            self.finish(action_id, FAILED, str(exc))
            raise
        self.finish(action_id)

    def record_allocation(self, job_id: str, planned: Mapping[str, int], actual: Mapping[str, tuple[int, ...]],
                          matched: bool, round_id: str = "") -> None:
        self.record_allocations([(job_id, planned, actual, matched)], round_id)

    def record_allocations(self, rows: Sequence[tuple[str, Mapping[str, int], Mapping[str, tuple[int, ...]], bool]],
                           round_id: str = "") -> None:
        """Record ``(job_id, planned, actual, matched)`` allocations read back after starts, in one transaction."""
        if not rows:
            return
        now = self.clock()
        with self.db.conn:
            self.db["allocations"].insert_all([{
                "round_id": round_id, "job_id": str(job_id), "planned": json.dumps(dict(planned), sort_keys=True),
                "actual": json.dumps({n: list(i) for n, i in actual.items()}, sort_keys=True),
                "matched": int(matched), "at": now} for job_id, planned, actual, matched in rows])
        self.commits += 1

    # ----- reading ------------------------------------------------------------------------------
    def actions(self, *, status: str | None = None, job_id: str | None = None) -> list[Action]:
        where, params = [], []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if job_id is not None:
            where.append("job_id = ?")
            params.append(str(job_id))
        rows = self.db["actions"].rows_where(" and ".join(where) or None, params, order_by="id")
        return [_action(r) for r in rows]

    def last_of(self, job_id: str, kinds: Sequence[str]) -> Action | None:
        """The job's newest action of one of ``kinds`` (any status), or None: what ``actions(job_id=...)``
        filtered by kind ends with, without reading the job's whole history."""
        marks = ", ".join("?" for _ in kinds)
        cur = self.db.conn.execute(f"select * from actions where job_id = ? and kind in ({marks}) order by id desc limit 1",
                                   [str(job_id), *kinds])
        row = cur.fetchone()
        return _action(dict(zip([c[0] for c in cur.description], row))) if row else None

    def last_id(self) -> int:
        """The id of the newest action (0 for an empty journal)."""
        return int(self.db.conn.execute("select coalesce(max(id), 0) from actions").fetchone()[0])

    def counts_since(self, after_id: int) -> tuple[dict[tuple[str, str], int], int]:
        """Finished actions with an id above ``after_id``, counted by (kind, status), and the highest id
        counted (the metrics exporter keeps it, so each action is counted once). Actions still
        ``intended`` are left for a later call."""
        rows = self.db.conn.execute(
            "select kind, status, count(*), max(id) from actions where id > ? and status != ? group by kind, status",
            (after_id, INTENDED)).fetchall()
        first_open = self.db.conn.execute("select min(id) from actions where id > ? and status = ?",
                                          (after_id, INTENDED)).fetchone()[0]
        if first_open is not None:  # count only up to the first open action; the rest next time
            rows = self.db.conn.execute(
                "select kind, status, count(*), max(id) from actions where id > ? and id < ? group by kind, status",
                (after_id, first_open)).fetchall()
        counts = {(str(k), str(st)): int(n) for k, st, n, _m in rows}
        return counts, max([after_id, *(int(m) for *_r, m in rows)])

    def open_actions(self) -> list[Action]:
        return self.actions(status=INTENDED)

    def last_done(self, job_id: str, kind: str) -> Action | None:
        cur = self.db.conn.execute("select * from actions where job_id = ? and kind = ? and status = ? "
                                   "order by id desc limit 1", [str(job_id), kind, DONE])
        row = cur.fetchone()
        return _action(dict(zip([c[0] for c in cur.description], row))) if row else None

    def last_started(self, job_id: str, kind: str) -> float | None:
        """When the latest ``kind`` action on the job was journaled (any outcome but failed), epoch seconds.
        The engine asks it for every running job at every refresh: a writer keeps the answers while its
        connection has changed nothing (SQLite's ``total_changes``; the engine is the journal's one writer)."""
        version = self.db.conn.total_changes
        if self._started is None or self._started[0] != version:
            self._started = (version, {})
        answers, key = self._started[1], (str(job_id), kind)
        if key not in answers:
            row = self.db.conn.execute("select created from actions where job_id = ? and kind = ? and status != ? "
                                       "order by id desc limit 1", [str(job_id), kind, FAILED]).fetchone()
            answers[key] = float(row[0]) if row else None
        got = answers[key]
        if self._read_only:
            self._started = None  # another process writes: asked afresh every time
        return got

    def allocations(self, job_id: str | None = None) -> list[dict[str, Any]]:
        rows = self.db["allocations"].rows_where("job_id = ?" if job_id else None, [str(job_id)] if job_id else [],
                                                 order_by="id")
        return [{**r, "planned": json.loads(r["planned"]), "actual": json.loads(r["actual"]), "matched": bool(r["matched"])}
                for r in rows]

    # ----- recovery -----------------------------------------------------------------------------
    def mark_interrupted(self) -> list[Action]:
        """Mark every still-``intended`` action ``interrupted`` and return them (oldest first)."""
        open_ = self.open_actions()
        self.finish_all({a.id: (INTERRUPTED, "engine stopped before this action was confirmed") for a in open_})
        return open_



def _action(r: dict[str, Any]) -> Action:
    return Action(id=r["id"], round_id=r["round_id"] or "", job_id=r["job_id"], kind=r["kind"], args=json.loads(r["args"] or "{}"),
                  status=r["status"], error=r["error"] or "", created=r["created"], finished=r["finished"])
