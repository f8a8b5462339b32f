-- A JSON value with its shape and keys kept and every other value replaced by "•••": what an
-- erasure leaves of content (attributes, content state, alerts), as the console masks it.
CREATE OR REPLACE FUNCTION liveline_masked(p_value jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN CASE
        WHEN p_value IS NULL THEN NULL
        WHEN jsonb_typeof(p_value) = 'object' THEN coalesce(
            (SELECT jsonb_object_agg(m.key, liveline_masked(m.value)) FROM jsonb_each(p_value) AS m), '{}'::jsonb)
        WHEN jsonb_typeof(p_value) = 'array' THEN coalesce(
            (SELECT jsonb_agg(liveline_masked(a.value) ORDER BY a.n)
             FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(value, n)), '[]'::jsonb)
        ELSE to_jsonb('•••'::text)
    END;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_masked TO liveline_service, liveline_dashboard;
