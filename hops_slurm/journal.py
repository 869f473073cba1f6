"""The enactment journal: every action the engine means to take on Slurm, written before it is taken.

Where it sits: :mod:`hops_slurm.slurm.enact` wraps each Slurm operation (hold, place, reserve, attach,
release, requeuehold, detach, unreserve) in :meth:`Journal.action`, which writes the intent to SQLite,
runs the operation, then marks it ``done`` (or ``failed`` with Slurm's message). A crash (SIGKILL,
power loss) leaves the action ``intended``; on start the engine calls
:func:`hops_slurm.slurm.reconcile.reconcile`, which marks those ``interrupted`` (:meth:`Journal.mark_interrupted`)
and repairs Slurm's state: no job lost, none left released outside its reservation, no stray reservation. The journal also keeps
the allocations that actually started (GPU indices per node), as read back from Slurm.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
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


class Journal:
    """SQLite journal at ``path`` (created if missing; ``":memory:"`` for a throwaway one); ``read_only``:
    an existing journal read through a read-only URI (``plan --dry-run``), nothing created or written."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = str(path)
        self.clock: Callable[[], float] = time.time  # the engine sets Slurm's (virtual in a simulation)
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
        if "allocations" not in self.db.table_names():
            self.db["allocations"].create(
                {"id": int, "round_id": str, "job_id": str, "planned": str, "actual": str, "matched": int, "at": float},
                pk="id",
            )

    # ----- writing ------------------------------------------------------------------------------
    def intend(self, kind: str, job_id: str, args: Mapping[str, Any] | None = None, round_id: str = "") -> int:
        row = {"round_id": round_id, "job_id": str(job_id), "kind": kind, "args": json.dumps(dict(args or {}), sort_keys=True),
               "status": INTENDED, "error": "", "created": self.clock(), "finished": None}
        with self.db.conn:  # committed before the action runs
            return int(self.db["actions"].insert(row).last_pk)

    def finish(self, action_id: int, status: str = DONE, error: str = "") -> None:
        with self.db.conn:
            self.db["actions"].update(action_id, {"status": status, "error": error, "finished": self.clock()})

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
        with self.db.conn:
            self.db["allocations"].insert({
                "round_id": round_id, "job_id": str(job_id), "planned": json.dumps(dict(planned), sort_keys=True),
                "actual": json.dumps({n: list(i) for n, i in actual.items()}, sort_keys=True),
                "matched": int(matched), "at": self.clock(),
            })

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
        rows = list(self.db["actions"].rows_where("job_id = ? and kind = ? and status = ?", [str(job_id), kind, DONE],
                                                  order_by="id desc", limit=1))
        return _action(rows[0]) if rows else None

    def last_started(self, job_id: str, kind: str) -> float | None:
        """When the latest ``kind`` action on the job was journaled (any outcome but failed), epoch seconds."""
        rows = list(self.db["actions"].rows_where("job_id = ? and kind = ? and status != ?", [str(job_id), kind, FAILED],
                                                  order_by="id desc", limit=1))
        return float(rows[0]["created"]) if rows else None

    def allocations(self, job_id: str | None = None) -> list[dict[str, Any]]:
        rows = self.db["allocations"].rows_where("job_id = ?" if job_id else None, [str(job_id)] if job_id else [],
                                                 order_by="id")
        return [{**r, "planned": json.loads(r["planned"]), "actual": json.loads(r["actual"]), "matched": bool(r["matched"])}
                for r in rows]

    # ----- recovery -----------------------------------------------------------------------------
    def mark_interrupted(self) -> list[Action]:
        """Mark every still-``intended`` action ``interrupted`` and return them (oldest first)."""
        open_ = self.open_actions()
        for a in open_:
            self.finish(a.id, INTERRUPTED, "engine stopped before this action was confirmed")
        return open_



def _action(r: dict[str, Any]) -> Action:
    return Action(id=r["id"], round_id=r["round_id"] or "", job_id=r["job_id"], kind=r["kind"], args=json.loads(r["args"] or "{}"),
                  status=r["status"], error=r["error"] or "", created=r["created"], finished=r["finished"])
