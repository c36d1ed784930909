SELECT unit_id, body, embedding::vector(384) <=> %(q)s::vector(384) AS distance
  FROM memory_unit
 WHERE app_name = 'acme' AND user_id = 'big-user'
   AND embed_model = 'all-MiniLM-L6-v2' AND layer = 'event'
 ORDER BY embedding::vector(384) <=> %(q)s::vector(384)
 LIMIT 10
