"""slurmdbd + MariaDB for a minicluster with ``accounting = true`` (so ``sacct`` and GPU TRES work).

Where it sits: :class:`~hops_slurm.tools.minicluster.cluster.Minicluster` calls :meth:`Accounting.write_files`
while it writes the config, then starts the roles ``mariadb`` and ``slurmdbd`` (in that order, before
slurmctld) with :meth:`Accounting.start` and waits on :meth:`Accounting.ready`. ``down`` stops them by
PID like every other daemon.

MariaDB runs privately: its own data directory, socket and pid file under ``<state>/mariadb/``, its own
port, bound to 127.0.0.1, no option files read (``--no-defaults``). slurmdbd logs in over TCP as user
``slurm`` with a generated password kept in ``<state>/mariadb/slurm.password`` (root, mode 0600);
root administers the server over the socket (unix_socket authentication, no password). Once slurmdbd
answers, the cluster is registered with ``sacctmgr add cluster`` (only when it is not there yet), so
``up`` twice and ``down``/``up`` keep the accounting database. Caveat: a fresh ``up`` starts slurmctld
with clean state, which numbers jobs from 1 again; sacct then shows the newest job of each id (the
older ones with ``sacct -D``). Remove the state directory for an empty database.
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import socket
import subprocess
from pathlib import Path

from hops_slurm.errors import MiniclusterError
from hops_slurm.tools.minicluster import conf, processes
from hops_slurm.tools.minicluster.spec import MiniclusterSpec

log = logging.getLogger(__name__)

DB_USER = "slurm"
MYSQL_USER = "mysql"  # the system account Debian's mariadb-server creates; mariadbd drops to it


class Accounting:
    """The accounting half of one minicluster: paths, config, start commands and readiness checks."""

    def __init__(self, spec: MiniclusterSpec, prefix: list[str] | None = None, slurmdbd: str | None = None) -> None:
        """``prefix``/``slurmdbd``: how slurmdbd runs inside a Slurm root (MariaDB stays on the host)."""
        self.spec = spec
        self.prefix = prefix or []
        self.slurmdbd = slurmdbd
        self.state = spec.state_dir
        self.base = self.state / "mariadb"
        self.datadir = self.base / "data"
        self.run_dir = self.base / "run"
        self.socket = self.run_dir / "mariadb.sock"
        self.pid_file = self.run_dir / "mariadb.pid"
        self.password_file = self.base / "slurm.password"
        self.conf_file = self.state / "etc" / "slurmdbd.conf"
        self._db_user_ok = False
        self._cluster_ok = False

    @property
    def database(self) -> str:
        return f"slurm_acct_{self.spec.cluster_name}"

    def _password(self) -> str:
        if not self.password_file.exists():
            self.password_file.parent.mkdir(parents=True, exist_ok=True)
            self.password_file.touch(mode=0o600)
            self.password_file.write_text(secrets.token_hex(16) + "\n")
        self.password_file.chmod(0o600)
        return self.password_file.read_text().strip()

    # ----- files -----------------------------------------------------------------------------------
    def write_files(self, host: str) -> None:
        """slurmdbd.conf (0600, root: slurmdbd refuses anything else), and a MariaDB data directory
        initialised once (kept across ``down``/``up`` so accounting history survives)."""
        self.conf_file.write_text(conf.render_slurmdbd_conf(self.spec, host, DB_USER, self._password()))
        self.conf_file.chmod(0o600)
        try:
            mysql = pwd.getpwnam(MYSQL_USER)
        except KeyError:
            raise MiniclusterError(
                f"system user {MYSQL_USER!r} missing: install Debian's mariadb-server (apt-get install mariadb-server)"
            ) from None
        for d, mode in ((self.base, 0o755), (self.run_dir, 0o755), (self.datadir, 0o700)):
            d.mkdir(parents=True, exist_ok=True)
            os.chown(d, mysql.pw_uid, mysql.pw_gid)
            d.chmod(mode)
        if not (self.datadir / "mysql").is_dir():
            log.info("initialising MariaDB data directory %s", self.datadir)
            result = subprocess.run(
                [
                    _prog("mariadb-install-db"), "--no-defaults", f"--user={MYSQL_USER}", f"--datadir={self.datadir}",
                    "--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve",
                ],
                capture_output=True, text=True, timeout=120,
            )
            if result.returncode != 0:
                raise MiniclusterError(
                    f"mariadb-install-db failed ({result.returncode}) for {self.datadir}:\n"
                    f"{(result.stderr or result.stdout)[-1500:]}\nremove {self.datadir} and run `up` again"
                )

    # ----- processes -------------------------------------------------------------------------------
    def argv(self, role: str) -> list[str]:
        if role == "mariadb":
            return [
                _prog("mariadbd"), "--no-defaults", f"--user={MYSQL_USER}", f"--datadir={self.datadir}",
                f"--socket={self.socket}", f"--pid-file={self.pid_file}", f"--port={self.spec.ports.mariadb}",
                "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                # The least slurmdbd accepts without an "error: Database settings not recommended" line.
                "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=64M", "--innodb-lock-wait-timeout=900",
                "--innodb-flush-log-at-trx-commit=2",
            ]
        if role == "slurmdbd":
            # slurmdbd has no config-file option: it reads slurmdbd.conf beside $SLURM_CONF.
            return [self.slurmdbd or _prog("slurmdbd"), "-D"]
        raise ValueError(f"not an accounting role: {role!r}")

    def start(self, role: str, env: dict[str, str]) -> processes.Daemon:
        if role == "mariadb":
            self._db_user_ok = False
        else:
            self._cluster_ok = False
        name = "mariadb" if role == "mariadb" else "slurmdbd"
        return processes.start(role, self.argv(role), self.state / "log" / f"{name}.out", env=env,
                               prefix=self.prefix if role == "slurmdbd" else None)

    def ready(self, role: str, env: dict[str, str]) -> bool:
        """True once ``role`` serves; does the one-time setup on the way (database user, cluster)."""
        if role == "mariadb":
            if not self.socket.exists():
                return False
            if not self._db_user_ok:
                self._db_user_ok = self._create_db_user()
            return self._db_user_ok
        if role != "slurmdbd":
            raise ValueError(f"not an accounting role: {role!r}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", self.spec.ports.slurmdbd)) != 0:
                return False
        if not self._cluster_ok:
            self._cluster_ok = self._register_cluster(env)
        return self._cluster_ok

    # ----- one-time setup --------------------------------------------------------------------------
    def sql(self, statement: str) -> subprocess.CompletedProcess[str]:
        """Run SQL as MariaDB's root over the private socket (unix_socket authentication)."""
        return subprocess.run(
            [_prog("mariadb"), "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-B", "-e", statement],
            capture_output=True, text=True, timeout=30,
        )

    def _create_db_user(self) -> bool:
        pw = self._password()
        statements = []
        for host in ("localhost", "127.0.0.1"):
            statements += [
                f"CREATE USER IF NOT EXISTS '{DB_USER}'@'{host}' IDENTIFIED BY '{pw}'",
                f"ALTER USER '{DB_USER}'@'{host}' IDENTIFIED BY '{pw}'",  # the password file may be new
                f"GRANT ALL ON `{self.database}`.* TO '{DB_USER}'@'{host}'",
            ]
        result = self.sql(";".join(statements) + ";FLUSH PRIVILEGES;")
        if result.returncode == 0:
            return True
        if "Can't connect" in result.stderr:  # socket there, server still starting
            return False
        raise MiniclusterError(
            f"creating MariaDB user {DB_USER!r} failed: {result.stderr.strip()}; see {self.state / 'log' / 'mariadb.out'}"
        )

    def _register_cluster(self, env: dict[str, str]) -> bool:
        name = self.spec.cluster_name
        listed = subprocess.run(
            ["sacctmgr", "-n", "-P", "list", "cluster", "format=Cluster"], env=env, capture_output=True, text=True, timeout=30
        )
        if listed.returncode != 0:
            if "authentication" in listed.stderr.lower():
                raise MiniclusterError(
                    f"sacctmgr cannot authenticate to slurmdbd: {listed.stderr.strip()}; "
                    f"check munged and AccountingStoragePass in {self.spec.conf_path}"
                )
            log.debug("sacctmgr list cluster: %s", listed.stderr.strip())
            return False  # slurmdbd listens but is not answering yet
        if name in listed.stdout.split():
            return True
        added = subprocess.run(["sacctmgr", "-i", "add", "cluster", name], env=env, capture_output=True, text=True, timeout=30)
        if added.returncode != 0:
            raise MiniclusterError(
                f"`sacctmgr -i add cluster {name}` failed: {(added.stderr or added.stdout).strip()}; "
                f"see {self.state / 'log' / 'slurmdbd.log'}"
            )
        log.info("registered cluster %s with slurmdbd", name)
        return True


def _prog(name: str) -> str:
    for d in ("/usr/sbin", "/usr/bin"):
        if Path(d, name).exists():
            return str(Path(d, name))
    raise MiniclusterError(f"{name} not found: accounting needs Debian's mariadb-server and slurmdbd (apt-get install mariadb-server slurmdbd)")
