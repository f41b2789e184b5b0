"""Services that scale-out tests and benchmarks start themselves, with all their traffic on this
machine.

PostgreSQL: a throwaway cluster from Debian's binaries (`apt-get install postgresql`), listening
on 127.0.0.1 and on a unix socket in its own directory. Ray: runs go in a network namespace that
has only loopback, because Ray binds this machine's interface address even when told 127.0.0.1
(DESIGN.md, "Scale-out").

Where a service cannot start, `ServiceUnavailable` says so with the command that fixes it; tests
turn it into a skip (or a failure under CI), a benchmark into an error.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from glob import glob
from pathlib import Path

DATABASE = "cq2a_test"
# PostgreSQL refuses to run as root; as root, run it as Debian's system user of that name.
SYSTEM_USER = "postgres"
# Brings loopback up, then runs the rest of the command line (`sh -c SCRIPT sh ARGV...`).
NAMESPACE_SCRIPT = 'ip link set lo up && exec "$@"'


class ServiceUnavailable(RuntimeError):
    """A service cannot start here; the message names what is missing and how to get it."""


@dataclass(frozen=True)
class Postgres:
    """A running cluster: `url` over TCP on loopback; `socket_url` over its unix socket, which
    also reaches it from inside a network namespace (the file system is shared)."""

    url: str
    socket_url: str


def postgres_bindir() -> Path | None:
    """The newest of Debian's `/usr/lib/postgresql/N/bin`, else `pg_config --bindir`."""
    found = sorted(
        (Path(initdb).parent for initdb in glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda bindir: int(bindir.parent.name) if bindir.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = Path(
            subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip()
        )
        if (bindir / "initdb").exists():
            return bindir
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def as_postgres_user() -> list[str]:
    """The prefix that runs a PostgreSQL binary as a non-root user (none when not root)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("runuser"):
        raise ServiceUnavailable("PostgreSQL will not run as root and runuser is missing")
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise ServiceUnavailable(
            f"running as root without a {SYSTEM_USER!r} user: apt-get install postgresql"
        ) from None
    return ["runuser", "-u", SYSTEM_USER, "--"]


@contextmanager
def running_postgres(database: str = DATABASE) -> Iterator[Postgres]:
    """Start a cluster in a temporary directory with trust auth, create `database`, and stop
    and remove it on exit."""
    bindir = postgres_bindir()
    if bindir is None:
        raise ServiceUnavailable(
            "PostgreSQL's binaries are missing: apt-get install postgresql "
            "(or put a PostgreSQL build's pg_config on PATH)"
        )
    prefix = as_postgres_user()
    # Not under a test's tmp_path: that is private to root, and the server runs as postgres.
    home = Path(tempfile.mkdtemp(prefix="cq2a-pg-"))
    data = home / "data"
    port = free_port()
    if prefix:
        shutil.chown(home, SYSTEM_USER, SYSTEM_USER)

    def run(*argv: str) -> None:
        # cwd=home: the postgres user may not be able to read the directory this runs in.
        done = subprocess.run([*prefix, *argv], cwd=home, capture_output=True, text=True)
        if done.returncode != 0:
            log = home / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed:\n{done.stdout}{done.stderr}{tail}")

    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    try:
        run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )
        run(
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(home / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        try:
            run(
                str(bindir / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                database,
            )
            yield Postgres(
                url=f"postgresql://postgres@127.0.0.1:{port}/{database}",
                socket_url=f"postgresql://postgres@/{database}?host={home}&port={port}",
            )
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(home, ignore_errors=True)


@functools.cache
def loopback_namespace_prefix() -> tuple[str, ...] | None:
    """`unshare -n` as root, `unshare -rn` (a user namespace) otherwise, if it works here."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return None
    unshare = ("unshare", "-n") if os.geteuid() == 0 else ("unshare", "-rn")
    prefix = (*unshare, "sh", "-c", NAMESPACE_SCRIPT, "sh")
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    return prefix if probe.returncode == 0 else None


def in_loopback_namespace(argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` in a new network namespace whose only interface is
    loopback, up."""
    prefix = loopback_namespace_prefix()
    if prefix is None:
        raise ServiceUnavailable(
            "cannot make a loopback-only network namespace: needs `unshare` (util-linux) and "
            "`ip` (iproute2), and root or unprivileged user namespaces"
        )
    return [*prefix, *argv]


def run_in_loopback_namespace(
    argv: Sequence[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a loopback-only network namespace, its output captured."""
    return subprocess.run(
        in_loopback_namespace(argv), capture_output=True, text=True, timeout=timeout, env=env
    )
