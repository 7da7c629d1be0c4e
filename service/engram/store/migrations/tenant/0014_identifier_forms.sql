-- Identifiers are read in one canonical spelling (domain/identifiers.py): full-width folded, no
-- hyphen inside a code, "CA 981" joined to ca981. Older memories get those forms beside the
-- spellings they kept, in their identifiers (the rule channel) and their search tokens (the
-- keyword channel). identifier_forms mirrors the Python reading for what older memories can hold;
-- tests/integration/test_identifier_forms.py holds the two to the same forms.
CREATE FUNCTION {{schema}}.identifier_forms(content text, identifiers text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(DISTINCT f.form), '{}') FROM (
        SELECT i AS form FROM unnest(identifiers) AS i
        UNION ALL
        SELECT replace(i, '-', '') FROM unnest(identifiers) AS i
        WHERE i ~ '^[a-z0-9]+(-[a-z0-9]+)+$' AND i !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
        UNION ALL
        SELECT lower(m[1] || m[2])
        FROM regexp_matches(normalize(content, NFKC), '(?:^|[^[:alnum:]_@.])([A-Za-z]{1,3})[ -]([0-9]{2,})(?![[:alnum:]_@])', 'g') AS m
        WHERE lower(m[1]) <> ALL (ARRAY['a', 'age', 'am', 'an', 'and', 'are', 'as', 'ask', 'at', 'be', 'bus', 'but', 'by', 'can', 'day', 'did', 'do', 'for', 'get', 'go', 'got', 'had', 'has', 'he', 'her', 'him', 'his', 'how', 'if', 'in', 'is', 'it', 'its', 'let', 'may', 'me', 'my', 'no', 'not', 'now', 'of', 'on', 'one', 'or', 'our', 'out', 'own', 'pay', 'per', 'put', 'saw', 'see', 'set', 'she', 'so', 'the', 'to', 'too', 'top', 'two', 'up', 'us', 'was', 'we', 'who', 'why', 'you'])
        UNION ALL
        SELECT m[1] FROM regexp_matches(normalize(content, NFKC), '(?:^|[^[:alnum:]_@.-])([0-9]{3,})(?![[:alnum:]_@-])', 'g') AS m
        WHERE content <> normalize(content, NFKC)
    ) AS f
$$;

UPDATE {{schema}}.memories m
SET identifiers = f.forms,
    search_tokens = m.search_tokens || array_to_tsvector(f.forms)
FROM (SELECT x.id, {{schema}}.identifier_forms(x.content, x.identifiers) AS forms FROM {{schema}}.memories x) AS f
WHERE f.id = m.id AND NOT (f.forms <@ m.identifiers);
