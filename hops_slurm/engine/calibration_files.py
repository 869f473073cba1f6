"""What ``hops-slurm calibrate`` measured, taken into the estimator's store by the engine.

Where it sits: ``hops-slurm calibrate`` writes one :class:`profiler.records.CalibrationRecord` file per GPU type
and scope (``calibration-<type>-<link|net>.json``) into the ``[paths] calibrations`` folder (under
``state_dir``). At every refresh the engine's calibrate step (:meth:`hops_slurm.engine.estimates.StoreReader.ensure_calibrations`)
asks :meth:`CalibrationFiles.new_records` for the records of the files that are new or changed since it last
looked and ingests them (:func:`profiler.ingest.ingest_calibration`, the engine being the store's only writer):
from then on eq. 2's B_link and B_net of that type are the measured ones, not ``[engine] default_b_link`` /
``default_b_net``. A file that is not a regular file, too large, owned by another user than root or the engine's
(a measurement steers every job's estimates: only the administrator's count), or not a valid calibration record is
one warning (once per version of the file) and is skipped; the other files are still read.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from profiler.records import CalibrationRecord, read_records

log = logging.getLogger(__name__)

#: a calibration record is a few kilobytes (one point per message size); more is not one
MAX_FILE_BYTES = 1 << 20
PATTERN = "*.json"


class CalibrationFiles:
    """The calibration folder as last read: each file's (mtime, size), so an unchanged file is not read again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: dict[str, tuple[int, int]] = {}

    def new_records(self) -> list[CalibrationRecord]:
        """The calibration records of the files new or changed since the last call (none if the folder is missing)."""
        if not self.folder.is_dir():
            return []
        out: list[CalibrationRecord] = []
        for path in sorted(self.folder.glob(PATTERN)):
            try:
                st = path.lstat()  # a link is not followed
            except OSError:
                continue
            version = (st.st_mtime_ns, st.st_size)
            if self.seen.get(path.name) == version:
                continue
            self.seen[path.name] = version
            out.extend(self._read(path, st))
        return out

    @staticmethod
    def _read(path: Path, st: os.stat_result) -> list[CalibrationRecord]:
        size = st.st_size
        if not stat.S_ISREG(st.st_mode):
            log.warning("calibration %s: not a regular file: skipped", path)
            return []
        if st.st_uid not in (0, os.geteuid()):
            log.warning("calibration %s: owned by uid %d, not by root or the engine: skipped", path, st.st_uid)
            return []
        if size > MAX_FILE_BYTES:
            log.warning("calibration %s: %d bytes, more than a calibration record (%d): skipped", path, size, MAX_FILE_BYTES)
            return []
        try:
            records = read_records(path)
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            log.warning("calibration %s: not a calibration record: %s", path, str(exc).splitlines()[0][:300])
            return []
        found = [r for r in records if isinstance(r, CalibrationRecord)]
        if len(found) != len(records):
            log.warning("calibration %s: %d record(s) that are not calibrations: ignored", path, len(records) - len(found))
        return found
