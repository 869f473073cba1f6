"""Test crash points of the engine: a journal that stops the process at a chosen journaled step.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.open` opens its journal with
:func:`crashing_journal`, which is the plain :class:`hops_slurm.journal.Journal` unless the environment
names a crash point (the live crash and fault tests set these; nothing else does):

* ``HOPS_ENGINE_CRASH_AFTER=k``: after the k-th action of a round was carried out, before it is marked done
  (the actions of one journal phase are marked together: the crash leaves the whole phase unmarked);
* ``HOPS_ENGINE_CRASH_AT=KIND[:before]``: at the first action of that kind anywhere (refresh, round,
  profiling, reconcile), once Slurm carried it out, or with ``:before`` right after its intent was written;
* ``HOPS_ENGINE_CRASH_PAUSE_FILE=PATH``: instead of exiting, write the pid there and wait for SIGKILL;
* ``HOPS_ENGINE_WAIT_AT=KIND`` (with the pause file): not a crash, a pause after the first such action
  until the file is removed, so a test can inject a fault (stop slurmctld) in the middle of a round.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hops_slurm.journal import Journal

log = logging.getLogger(__name__)

CRASH_ENV = "HOPS_ENGINE_CRASH_AFTER"
CRASH_AT_ENV = "HOPS_ENGINE_CRASH_AT"  # KIND or KIND:before: at the first journaled action of that kind
PAUSE_ENV = "HOPS_ENGINE_CRASH_PAUSE_FILE"  # with a crash point: wait there to be killed
WAIT_AT_ENV = "HOPS_ENGINE_WAIT_AT"  # KIND: after the first such action, wait while the pause file exists


class CrashingJournal(Journal):
    """A journal that stops the engine at a test crash point: after ``after`` round actions were carried
    out (before the journal marks the last one done), or at the first action of kind ``at_kind`` (any
    step: refresh, round, profiling, reconcile), once Slurm carried it out or, with ``before``, right
    after its intent was journaled. With ``pause_file`` it writes its pid there and waits to be killed
    from outside (SIGKILL: the real thing); without, it ends the process at once (``os._exit``)."""

    def __init__(self, path: Path | str, after: int = 0, pause_file: Path | None = None, *, at_kind: str = "",
                 before: bool = False, wait_kind: str = "") -> None:
        super().__init__(path)
        self.after = after
        self.pause_file = pause_file
        self.at_kind = at_kind
        self.before = before
        self.wait_kind = wait_kind  # not a crash: a pause for a fault injected from outside
        self.count = 0
        self._round_actions: set[int] = set()
        self._marked: set[int] = set()

    def _crash(self, what: str) -> None:
        log.error("crash point reached: %s", what)
        logging.shutdown()
        if self.pause_file is None:
            os._exit(99)
        self.pause_file.write_text(str(os.getpid()))
        while True:  # until the test kills the process
            time.sleep(3600)

    def intend_all(self, items: Sequence[tuple[str, str, Mapping[str, Any] | None]], round_id: str = "") -> list[int]:
        ids = super().intend_all(items, round_id)  # a phase's intents: committed together
        for action_id, (kind, job_id, _args) in zip(ids, items):
            if round_id.startswith("round"):
                self._round_actions.add(action_id)
            if self.at_kind and kind == self.at_kind:
                if self.before:
                    self._crash(f"{kind} job={job_id} journaled, not carried out")
                self._marked.add(action_id)
        return ids

    def _wait(self, what: str) -> None:
        assert self.pause_file is not None
        log.warning("pause point reached: %s; waiting while %s exists", what, self.pause_file)
        self.wait_kind = ""
        self.pause_file.write_text(str(os.getpid()))
        while self.pause_file.exists():
            time.sleep(0.2)

    def finish_all(self, outcomes: Mapping[int, tuple[str, str]]) -> None:
        # a phase's outcomes are committed together: a crash at any of its actions leaves them all intended
        for action_id, (status, _error) in outcomes.items():
            if self.wait_kind and self.pause_file is not None:
                row = self.db["actions"].get(action_id)
                if row["kind"] == self.wait_kind:
                    self._wait(f"{self.wait_kind} #{action_id} carried out")
            if action_id in self._marked:
                self._crash(f"{self.at_kind} #{action_id} carried out ({status}), not marked")
            if self.after and action_id in self._round_actions:
                self.count += 1
                if self.count >= self.after:
                    self._crash(f"after {self.count} round actions")
        super().finish_all(outcomes)


def crashing_journal(path: Path) -> Journal:
    """The journal the engine opens: a :class:`CrashingJournal` when a test crash point is set."""
    after, at, wait = os.environ.get(CRASH_ENV), os.environ.get(CRASH_AT_ENV, ""), os.environ.get(WAIT_AT_ENV, "")
    pause = Path(os.environ[PAUSE_ENV]) if os.environ.get(PAUSE_ENV) else None
    if not after and not at and not wait:
        return Journal(path)
    kind, _, when = at.partition(":")
    return CrashingJournal(path, int(after or 0), pause, at_kind=kind, before=when == "before", wait_kind=wait)
