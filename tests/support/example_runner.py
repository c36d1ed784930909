"""Run example files one after another in this one process, each as `python FILE` runs it (as __main__, with
globals of its own, in an empty folder of its own), and write what each printed and how it ended as JSON. The
imports every example makes (torch, the model, the workbench) are paid once, not once per file.

    python example_runner.py RESULTS.json WORK_FOLDER FILE...
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import traceback
from pathlib import Path


def run(file: Path, folder: Path) -> dict[str, str | None]:
    """One example's printed text and its error (a traceback, or a non-zero exit), None when it finished."""
    folder.mkdir(parents=True)
    os.chdir(folder)
    printed, error = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(str(file), run_name="__main__")
    except SystemExit as exc:
        error = None if exc.code in (0, None) else f"exit {exc.code}"
    except BaseException:  # any exception is the example's failure: reported, not raised
        error = traceback.format_exc()
    return {"stdout": printed.getvalue(), "error": error}


def main(results: str, work: str, *files: str) -> None:
    paths = [Path(f).resolve() for f in (results, work, *files)]  # before the first example changes the folder
    out = {file.name: run(file, paths[1] / file.stem) for file in paths[2:]}
    paths[0].write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
