CREATE TABLE memory_unit (
    app_name     text        NOT NULL,
    user_id      text        NOT NULL,
    session_id   text        NOT NULL,
    layer        text        NOT NULL,
    unit_id      text        NOT NULL,
    event_ids    text[]      NOT NULL,
    author       text,
    occurred_at  timestamptz NOT NULL,
    body         text        NOT NULL,
    rendered     text,
    embed_model  text        NOT NULL REFERENCES memlab_embedding_model (model_id),
    embedding    vector      STORAGE PLAIN NOT NULL,
    lexemes      tsvector    GENERATED ALWAYS AS (to_tsvector('english', coalesce(rendered, body))) STORED,
    CONSTRAINT memory_unit_once PRIMARY KEY (app_name, user_id, layer, session_id, unit_id, embed_model)
) PARTITION BY HASH (user_id);

DO $$
BEGIN
    FOR i IN 0..7 LOOP
        EXECUTE format('CREATE TABLE memory_unit_p%s PARTITION OF memory_unit '
                       'FOR VALUES WITH (MODULUS 8, REMAINDER %s)', i, i);
    END LOOP;
END $$;
