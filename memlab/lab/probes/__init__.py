"""Reliability probes added after the second hostile probe (issue 22): one module per class of hole, each with
a `*_family(store, embedder, workdir) -> Family` run by `memlab check reliability`."""
