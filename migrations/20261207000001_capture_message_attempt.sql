-- The capture attempt an outbox message names, parsed in one place: a
-- capture message's deduplication id is `{page_import_id}:{attempt}`
-- (`page_import_contract::job::deduplication_id`). Every statement that
-- reads it (stamping `dispatched_at`, ending a refused message's attempt,
-- dropping the messages of ended attempts: `db::outbox`) joins this
-- function. A message of another queue, or one whose id names no attempt
-- (written by hand, or by an older release), names none: no row, rather
-- than a failed cast. The cast is guarded by `case`, not only by the
-- `where`: PostgreSQL does not promise the order in which it evaluates a
-- query's conditions once this is inlined into it. A single SELECT in
-- LANGUAGE SQL, immutable and not strict, so the planner inlines it.
create function capture_message_attempt(queue text, deduplication_id text)
returns table (page_import_id text, attempt int)
language sql immutable parallel safe
as $$
    select split_part($2, ':', 1),
           case when split_part($2, ':', 2) ~ '^[0-9]{1,9}$' then split_part($2, ':', 2)::int end
    where $1 = 'page_import' and split_part($2, ':', 2) ~ '^[0-9]{1,9}$'
$$;
