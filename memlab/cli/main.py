"""The `memlab` app and what its commands share: the deferred workbench, one-line user errors, results tables,
`--version`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import version as installed_version
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn, TypeVar

import psycopg
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import memlab

if TYPE_CHECKING:
    import pandas as pd

    from memlab.lab import Dataset

app = typer.Typer(help="memlab: measure and tune the long-term memory of AI agents.", no_args_is_help=True)
console = Console(width=None if Console().is_terminal else 160)


check_app = typer.Typer(help="Checks of memlab itself.", no_args_is_help=True)
app.add_typer(check_app, name="check")


Command = TypeVar("Command", bound=Callable[..., object])
DEFAULT_SUITE = "quick"  # `memlab eval` with neither --config nor --suite: a first run of a few minutes


def workbench() -> ModuleType:
    """memlab.lab, imported on first use; the CLI reaches each stage through its face (`lab.report.gate_table`).
    The CLI's only deferred import: the workbench (pandas, scikit-learn, scipy, matplotlib, FAISS) costs seconds of
    CPU to import, more than `memlab --help` itself takes, so --help, --version, `memlab models` and a mistyped
    command do not pay it."""
    from memlab import lab

    return lab


def fail(message: object) -> NoReturn:
    """A user error: one line on the terminal (never wrapped, no traceback) and exit code 2. The line passes the
    redactor every memlab message passes (an error may echo a DSN password or an Authorization header)."""
    text = " ".join(memlab.redact_secrets(message).split())
    console.print(f"[red]error:[/] {escape(text)}", soft_wrap=True, markup=True, highlight=False)  # [x] is text
    raise typer.Exit(2)


def user_errors(command: Command) -> Command:
    """Turn what a user can get wrong (config, data, paths, the database's address) into `fail`; a bug still
    shows its traceback."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except memlab.MemlabError as exc:
            fail(exc)
        except psycopg.OperationalError as exc:
            fail(f"cannot reach the database: {str(exc).splitlines()[0] if str(exc) else exc!r}. Check --dsn or "
                 "MEMLAB_DSN, or leave both unset for the embedded server.")  # fmt: skip
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename or ''}")
        except RecursionError:
            fail("an input is nested too deeply to read (Python's recursion limit): memlab's files (data sets, "
                 "configs, judgments, query logs, baselines) nest at most 100 levels; flatten the file")

    return run  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        console.print(f"memlab {installed_version('memlab')}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print memlab's version and exit."
    ),
) -> None:
    """memlab: measure and tune the long-term memory of AI agents."""


def summary_table(summary: pd.DataFrame, title: str) -> Table:
    """A results table that stays readable at 80 columns: names fold instead of being cut, numbers to three
    decimals, missing values blank."""
    from pandas.api.types import is_numeric_dtype  # deferred like the workbench (see `workbench`), which loads it

    lab = workbench()
    table = Table(title=title)
    for col in summary.columns:
        numeric = is_numeric_dtype(summary[col])
        table.add_column(str(col), justify="right" if numeric else "left", overflow="fold")
    for row in summary.itertuples(index=False, name=None):
        table.add_row(*[Text(lab.base.format_cell(v)) for v in row])  # a metric key's [qtype=x] is text, not markup
    return table


def note_authors(data: Dataset) -> None:
    """The note `check-dataset` gives (and `questions generate --generator rules`) where users lack author 'user':
    the features that read that author, the rule fact extractor first, will find nothing there."""
    note = workbench().datasets.author_note(data)
    if note:
        console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True, highlight=False)
