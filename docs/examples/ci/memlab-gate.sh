#!/usr/bin/env bash
# memlab's regression gate for any CI (GitLab CI, Jenkins, Buildkite, a laptop): the steps of github-actions.yml
# beside this file. It evaluates your suite, gates the run against your committed baseline, writes the verdicts as
# JUnit XML, posts gate.md on the pull request, and exits non-zero when the gate fails.
#
# Settings (environment variables, default in brackets):
#   MEMLAB_CONFIG        your suite: an experiment config (YAML)                                       [required]
#   MEMLAB_BASELINE      the committed baseline; make it once with `memlab baseline --run RUN --out FILE` and
#                        commit the <name>.questions.parquet written beside it too                [memlab/baseline.json]
#   MEMLAB_RUN           the run folder (report.md, metrics.json, gate.md, junit.xml): keep it as the job's
#                        artifact, also when the job fails; a finished run already there is gated, not run again
#                                                                                                  [memlab-run]
#   MEMLAB_JUNIT         the gate's verdicts as JUnit XML, for the CI's test view                  [$MEMLAB_RUN/junit.xml]
#   MEMLAB_HOME          memlab's data folder: cache its cache/ and models/ between jobs (the embedding cache,
#                        model replies, prepared models; its pgdata/ is made afresh in seconds)   [~/.cache/memlab]
#   MEMLAB_PACKAGE       what pip installs as memlab: a version, a wheel or a git URL                          [memlab]
#   MEMLAB_TORCH         the torch memlab's own CI runs, installed first as the CPU build                      [2.13.0]
#   MEMLAB_VENV          the virtual environment memlab is installed into; cache it, or pip's cache
#                        (PIP_CACHE_DIR: torch, memlab and the embedding model, which comes as a wheel)  [.memlab-venv]
#   MEMLAB_SKIP_INSTALL  1: install nothing, use the memlab already on PATH                                     [0]
#   MEMLAB_PR            a pull request number: gate.md is posted on it with the GitHub CLI (gh reads GH_TOKEN,
#                        and GH_REPO outside a clone of the repository)                                   [unset]
# Exit status: memlab's own: 0 when the gate passes, 1 on a regression, 2 on a user error (a bad config, no
# baseline, a baseline of another suite: the one-line message says which and what to do).
set -euo pipefail

: "${MEMLAB_CONFIG:?set MEMLAB_CONFIG to the experiment config (YAML) of your suite}"
MEMLAB_BASELINE="${MEMLAB_BASELINE:-memlab/baseline.json}"
MEMLAB_RUN="${MEMLAB_RUN:-memlab-run}"
MEMLAB_JUNIT="${MEMLAB_JUNIT:-$MEMLAB_RUN/junit.xml}"
MEMLAB_PACKAGE="${MEMLAB_PACKAGE:-memlab}"
MEMLAB_TORCH="${MEMLAB_TORCH:-2.13.0}"
MEMLAB_VENV="${MEMLAB_VENV:-.memlab-venv}"
export MEMLAB_HOME="${MEMLAB_HOME:-$HOME/.cache/memlab}"
# memlab's models come with its packages: nothing is fetched from a model hub at run time
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

if [ "${MEMLAB_SKIP_INSTALL:-0}" != 1 ]; then
  python3 -m venv "$MEMLAB_VENV"
  # torch first, from the CPU index: PyPI's build of it brings gigabytes of CUDA
  "$MEMLAB_VENV/bin/python" -m pip install --quiet "torch==$MEMLAB_TORCH" --index-url https://download.pytorch.org/whl/cpu
  "$MEMLAB_VENV/bin/python" -m pip install --quiet "$MEMLAB_PACKAGE"
  PATH="$(cd "$MEMLAB_VENV/bin" && pwd):$PATH"
fi

# report.md in the run folder compares with the baseline too
memlab eval --config "$MEMLAB_CONFIG" --out "$MEMLAB_RUN" --baseline "$MEMLAB_BASELINE"

gate=0
memlab report --baseline "$MEMLAB_BASELINE" --run "$MEMLAB_RUN" --junit "$MEMLAB_JUNIT" || gate=$?

if [ -n "${MEMLAB_PR:-}" ] && [ -f "$MEMLAB_RUN/gate.md" ]; then
  gh pr comment "$MEMLAB_PR" --body-file "$MEMLAB_RUN/gate.md" || echo "memlab gate: could not post gate.md on pull request $MEMLAB_PR" >&2
fi
if [ "$gate" -ne 0 ]; then
  echo "memlab gate: failed (exit $gate) against $MEMLAB_BASELINE; the run is in $MEMLAB_RUN (gate.md, report.md)" >&2
fi
exit "$gate"
