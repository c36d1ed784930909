"""The fact tables have one home for their SQL (memlab/storage/fact_tables.py, beside the other tables' SQL):
fact memory turns rows into facts (memlab/facts/stored.py) and calls it, and no other module writes SQL on them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import memlab

PACKAGE = Path(memlab.__file__).resolve().parent
ROOT = PACKAGE.parent
OWNER = "memlab/storage/fact_tables.py"

_TABLE = re.compile(r"\b(?:semantic_fact|semantic_fact_observation|fact_watermark)\b")
_SQL_WORD = re.compile(
    r"\b(select|insert|update|delete|create|alter|drop|analyze|vacuum|truncate|copy|from|into|join|table|index)\b",
    re.IGNORECASE,
)


def fact_table_sql(source: str) -> list[str]:
    """Places in `source` that write SQL naming a fact table: a string literal (or f-string) naming one that reads
    as SQL or is passed to a call. Docstrings and plain names (a list of tables to vacuum) are not SQL."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _TABLE.search(node.value):
            parent = parents.get(node)
            text = node.value
            if isinstance(parent, ast.JoinedStr):  # an f-string piece: judge the whole f-string's text
                text = "".join(v.value for v in parent.values if isinstance(v, ast.Constant))
                parent = parents.get(parent)
            if isinstance(parent, ast.Expr):  # a docstring or bare string
                continue
            if _SQL_WORD.search(text) or isinstance(parent, ast.Call):
                found.append(f"{node.lineno}: SQL string naming a fact table: {text.strip()[:60]!r}")
    return found


def test_only_the_fact_tables_module_writes_fact_table_sql():
    offenders = {rel: hits for path in sorted(PACKAGE.rglob("*.py"))
                 if (rel := path.relative_to(ROOT).as_posix()) != OWNER
                 and (hits := fact_table_sql(path.read_text(encoding="utf-8")))}  # fmt: skip
    assert not offenders, f"SQL on the fact tables belongs in {OWNER}: {offenders}"


def test_the_owner_holds_the_sql():
    assert fact_table_sql((ROOT / OWNER).read_text(encoding="utf-8")), f"{OWNER} should hold the SQL"


@pytest.mark.parametrize(
    "source",
    [
        "conn.execute('SELECT count(*) FROM semantic_fact WHERE app_name = %s', [app])\n",
        "q = f'DELETE FROM fact_watermark WHERE user_id = {user}'\n",
        "conn.execute(sql.SQL('TRUNCATE {}').format(sql.Identifier('semantic_fact_observation')))\n",
    ],
)
def test_checker_catches_fact_table_sql(source):
    assert fact_table_sql(source)


@pytest.mark.parametrize(
    "source",
    [
        'TABLES = ("semantic_fact", "semantic_fact_observation", "fact_watermark")\n',
        'def f():\n    """Deletes from semantic_fact."""\n',
        "name = 'semantic_facts_seen'\n",
    ],
)
def test_checker_ignores_what_is_not_sql(source):
    assert not fact_table_sql(source)
