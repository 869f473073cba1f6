"""slurmdbd + MariaDB for a minicluster with ``accounting = true`` (so ``sacct`` and GPU TRES work).

MariaDB runs privately: its own data directory, socket and port under the state directory, bound to
127.0.0.1; slurmdbd talks to it with a generated password kept in the state directory (mode 0600).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
from pathlib import Path

from hops_slurm.errors import MiniclusterError
from hops_slurm.minicluster import conf, processes
from hops_slurm.minicluster.spec import MiniclusterSpec

DB_USER = "slurm"


class Accounting:
    def __init__(self, spec: MiniclusterSpec) -> None:
        self.spec = spec
        self.state = spec.state_dir
        self.datadir = self.state / "mysql"
        self.socket = self.state / "run" / "mysqld.sock"
        self.password_file = self.state / "etc" / "db.password"
        self._db_ready = False

    def _password(self) -> str:
        if not self.password_file.exists():
            self.password_file.write_text(secrets.token_hex(16))
            self.password_file.chmod(0o600)
        return self.password_file.read_text().strip()

    def write_files(self, host: str) -> None:
        path = self.state / "etc" / "slurmdbd.conf"
        path.write_text(conf.render_slurmdbd_conf(self.spec, host, DB_USER, self._password()))
        path.chmod(0o600)
        if not (self.datadir / "mysql").exists():
            self.datadir.mkdir(parents=True, exist_ok=True)
            subprocess.run(["chown", "-R", "mysql:mysql", str(self.datadir)], check=True)
            result = subprocess.run(
                ["mariadb-install-db", "--user=mysql", f"--datadir={self.datadir}", "--auth-root-authentication-method=socket",
                 "--skip-test-db"],
                capture_output=True, text=True,
            )
            if result.returncode != 0:
                raise MiniclusterError(f"mariadb-install-db failed: {result.stderr[-1500:]}")
        run_dir = self.state / "run"
        os.chmod(run_dir, 0o777 | 0o1000)  # mysqld (user mysql) creates its socket here; sticky like /tmp

    def start(self, role: str, env: dict[str, str]) -> processes.Daemon:
        log_dir = self.state / "log"
        if role == "mariadb":
            argv = [
                _prog("mariadbd"), "--no-defaults", "--user=mysql", f"--datadir={self.datadir}", f"--socket={self.socket}",
                f"--port={self.spec.ports.mariadb}", "--bind-address=127.0.0.1", f"--pid-file={self.state / 'run' / 'mysqld.pid'}",
                "--skip-log-bin", "--innodb-buffer-pool-size=64M", "--innodb-lock-wait-timeout=900",
            ]
            return processes.start(role, argv, log_dir / "mariadb.out", env=env)
        argv = [_prog("slurmdbd"), "-D"]
        return processes.start(role, argv, log_dir / "slurmdbd.out", env=env)

    def ready(self, role: str) -> bool:
        if role == "mariadb":
            if not self.socket.exists():
                return False
            if not self._db_ready:
                self._create_db_user()
                self._db_ready = True
            return True
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", self.spec.ports.slurmdbd)) == 0

    def _create_db_user(self) -> None:
        pw = self._password()
        sql = (
            f"CREATE USER IF NOT EXISTS '{DB_USER}'@'localhost' IDENTIFIED BY '{pw}';"
            f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{pw}';"
            f"GRANT ALL ON slurm_acct_{self.spec.cluster_name}.* TO '{DB_USER}'@'localhost';"
            f"GRANT ALL ON slurm_acct_{self.spec.cluster_name}.* TO '{DB_USER}'@'127.0.0.1';"
            "FLUSH PRIVILEGES;"
        )
        result = subprocess.run([_prog("mariadb"), f"--socket={self.socket}", "-uroot", "-e", sql], capture_output=True, text=True)
        if result.returncode != 0:
            raise MiniclusterError(f"creating the slurmdbd database user failed: {result.stderr.strip()}")


def _prog(name: str) -> str:
    for d in ("/usr/sbin", "/usr/bin"):
        if Path(d, name).exists():
            return str(Path(d, name))
    raise MiniclusterError(f"{name} not found (accounting needs Debian's mariadb-server and slurmdbd)")
