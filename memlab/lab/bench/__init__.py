"""memlab bench: search latency and recall at 10k to 1M rows, on corpora that look like real memory."""
