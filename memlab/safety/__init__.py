"""The library's safety code, its lowest layer: the secret filter (`secrets.find_secrets`, with its checks,
decoded shapes and pattern gates), secrets split across a session's events (`split_secrets`), the memo of texts
found clean (`clean_texts`) and the one redactor of messages, logs and run folders (`redact`). It imports no
other part of memlab (the import contract "safety-alone" in pyproject.toml), so every layer may use it."""
