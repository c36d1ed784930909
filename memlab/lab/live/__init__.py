"""Probing a live memory store (issue 26): a labelled set run read-only against the production database, with
alerts, drift against the previous probe, and index health. Nothing here writes to the probed store."""
