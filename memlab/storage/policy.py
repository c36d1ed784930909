"""The thresholds `strategy="auto"` uses, calibrated by `memlab bench` and stored with the store (a settings
table), so every process on this database picks strategies the same measured way."""

from __future__ import annotations

import json
from dataclasses import asdict

import psycopg
from psycopg import sql

from memlab.types import AutoPolicy

SETTINGS_TABLE = "memlab_setting"
POLICY_KEY = "auto_policy"

SETTINGS_DDL = f"""
CREATE TABLE IF NOT EXISTS {SETTINGS_TABLE} (
    name        text PRIMARY KEY,
    value       jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
"""


def create_settings(conn: psycopg.Connection) -> None:
    conn.execute(SETTINGS_DDL)


def load_policy(conn: psycopg.Connection) -> AutoPolicy | None:
    row = conn.execute(
        sql.SQL("SELECT value FROM {} WHERE name = %s").format(sql.Identifier(SETTINGS_TABLE)), [POLICY_KEY]
    ).fetchone()
    return AutoPolicy(**row[0]) if row else None


def save_policy(conn: psycopg.Connection, policy: AutoPolicy) -> None:
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (name, value) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()"
        ).format(sql.Identifier(SETTINGS_TABLE)),
        [POLICY_KEY, json.dumps(asdict(policy))],
    )
