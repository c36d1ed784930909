"""Model clients behind the `models:` config section: chat models (any OpenAI-compatible /v1/chat/completions)
and re-rankers (the /v1/rerank shape, or a local sentence-transformers CrossEncoder folder), with a total
deadline per call, bounded replies, no redirect to another origin (memlab.bounded_http), retries with backoff, a
concurrency limit and a disk cache keyed by the request's content and the model that answered; each cached reply
records what stored memory it was derived from (refs), so erasure drops it (forget_model_replies), and a call in
flight during an erasure stores nothing. Modules here are internal; use the names below."""

from memlab.models.cache import forget_model_replies, model_cache_dir
from memlab.models.chat import ChatClient, ChatReply, ChatRequest, open_chat
from memlab.models.errors import ModelError
from memlab.models.refs import deriving_from, event_ref, scope_refs, session_ref, text_refs, user_ref
from memlab.models.rerank import Reranker, RerankReply, open_reranker
from memlab.models.spec import MODEL_KINDS, ModelSpec, parse_models

__all__ = ["MODEL_KINDS", "ChatClient", "ChatReply", "ChatRequest", "ModelError", "ModelSpec", "RerankReply",
           "Reranker", "deriving_from", "event_ref", "forget_model_replies", "model_cache_dir", "open_chat",
           "open_reranker", "parse_models", "scope_refs", "session_ref", "text_refs", "user_ref"]  # fmt: skip
