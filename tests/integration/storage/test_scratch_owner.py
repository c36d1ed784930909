"""A scratch database's name records its owner (host, boot, pid, the process's start): a writable open drops the
ones whose owner on this host is gone (killed, the machine started again, the pid now another process's) and
never one of a live process, of another host, or a database memlab did not name."""

from __future__ import annotations

import subprocess
import sys

import psycopg
from psycopg import sql

import memlab
from memlab.storage.scratch import Owner, owner_of, scratch_name


def _databases(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def test_a_writable_open_drops_the_scratch_databases_of_dead_owners_only(store):
    here = Owner.this_process()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    owners = {
        "dead": Owner(here.host, here.boot, int(gone.stdout), here.start),
        "rebooted": Owner(here.host, "abcdef" if here.boot != "abcdef" else "fedcba", here.pid, here.start),
        "pid_reused": Owner(here.host, here.boot, here.pid, here.start + 1_000),
        "live": here,
        "other_host": Owner("000000" if here.host != "000000" else "111111", here.boot, 1, 1),
    }
    names = {how: scratch_name(f"memlab_test_{how}", owner) for how, owner in owners.items()}
    plain = "memlab_test_plain_database"
    assert all(owner_of(names[how]) == owners[how] for how in owners) and owner_of(plain) is None
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        for name in [*names.values(), plain]:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        memlab.open_store(dsn=store.dsn, read_only=True).close()  # a read-only open drops nothing
        assert {*names.values(), plain} <= _databases(store.dsn)
        memlab.open_store(dsn=store.dsn).close()
        left = _databases(store.dsn)
        assert {how for how, name in names.items() if name in left} == {"live", "other_host"}
        assert plain in left
    finally:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            for name in [*names.values(), plain]:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_name_fits_postgres_whatever_the_prefix():
    name = scratch_name("a_very_long_prefix_" * 5)
    assert len(name) <= 63 and owner_of(name) == Owner.this_process()
