"""The daemon's driver of the timetable (hops_slurm.engine.daemon.Driver) on a virtual clock: each step at its
instant, the monitor polling on its grid while the driver sleeps (a poll due at an instant left to the
instant's step), ticks a late step missed run once, and a failed step repaired before the next."""

from __future__ import annotations

from hops_slurm.core.timetable import LoopSettings
from hops_slurm.engine.daemon import Driver, Steps
from hops_slurm.errors import HopsError


class VirtualClock:
    def __init__(self, until: float) -> None:
        self.t, self.until = 0.0, until

    def now(self) -> float:
        return self.t

    def done(self) -> bool:
        return self.t >= self.until

    def next_event(self) -> float | None:
        return None

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def _driver(clock: VirtualClock, log: list[tuple[str, float]], cost: dict[str, float] | None = None,
            fail: set[str] | None = None, failed: list[str] | None = None) -> Driver:
    def step(name: str):
        def run() -> None:
            log.append((name, clock.t))
            clock.t += (cost or {}).get(name, 0.0)
            if name in (fail or set()):
                fail.discard(name)  # type: ignore[union-attr]
                raise HopsError(f"{name} failed")
        return run

    return Driver(LoopSettings(100.0, 40.0), clock, Steps(step("round"), step("refresh"), step("monitor"),
                                                          step("recover"), (failed if failed is not None else []).append),
                  30.0)


def test_steps_at_their_instants_and_monitor_polls_between_them() -> None:
    log: list[tuple[str, float]] = []
    _driver(VirtualClock(200.0), log).run()
    assert log == [("round", 0.0), ("monitor", 30.0), ("refresh", 40.0), ("monitor", 60.0), ("refresh", 80.0),
                   ("monitor", 90.0), ("round", 100.0), ("monitor", 120.0), ("refresh", 140.0),
                   ("monitor", 150.0), ("refresh", 180.0)]  # the poll due at 180 is the tick's there


def test_a_late_round_runs_the_tick_it_missed_once_and_a_failed_step_is_repaired_first() -> None:
    log: list[tuple[str, float]] = []
    _driver(VirtualClock(100.0), log, cost={"round": 85.0}, fail={"round"}).run()
    # the round took 85 s and failed: the ticks at 40 and 80 are one, late, after the repair
    assert log == [("round", 0.0), ("recover", 85.0), ("refresh", 85.0), ("monitor", 90.0)]


def test_a_repair_that_fails_is_counted_and_holds_the_next_step_back_until_it_succeeds() -> None:
    log: list[tuple[str, float]] = []
    failed: list[str] = []
    driver = _driver(VirtualClock(70.0), log, fail={"round"}, failed=failed)
    plain = driver.steps.recover

    def recover_second_time() -> None:  # the first repair fails (Slurm still unreachable), the next succeeds
        plain()
        if sum(1 for name, _ in log if name == "recover") == 1:
            raise HopsError("still unreachable")

    driver.steps.recover = recover_second_time
    driver.run()
    assert log == [("round", 0.0), ("recover", 30.0), ("recover", 40.0), ("refresh", 40.0), ("monitor", 60.0)]
    assert failed == ["round", "recovery"]  # each counted (hops_step_failures_total{step})
