DO $$
DECLARE
    part regclass;
BEGIN
    SELECT tableoid::regclass INTO part FROM memory_unit
     WHERE app_name = 'acme' AND user_id = 'big-user' LIMIT 1;
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS memlab_tenant_acme_big_user ON %s '
        'USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) '
        'WHERE embed_model = %L AND layer = %L AND app_name = %L AND user_id = %L',
        part, 'all-MiniLM-L6-v2', 'event', 'acme', 'big-user');
END $$;
ANALYZE memory_unit;
