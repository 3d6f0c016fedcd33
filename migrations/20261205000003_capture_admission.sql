-- Admission (SPEC §12) in one place. Every attempt joins the capture queue
-- through `capture_admit`, in the statement that queues it: a create's
-- first attempt (`db::page_import::insert_many_queued`) and every next one
-- (`db::page_import::start_next_attempt`). It locks the organizations'
-- backlog rows in organization id order (made when missing), admits of each
-- organization's `wanted` attempts as many as keep its queued count at most
-- `max_queued` (every one when `max_queued` is null: a re-dispatch of an
-- import admitted already), and counts them as queued, one update of each
-- row. The statement then queues exactly the admitted attempts. Each
-- organization appears once in `organization_ids` (an upsert cannot touch
-- a row twice); the callers group their requests by organization.
--
-- So the count's increment moves here from the insert trigger on
-- `capture_queue`, which updated the same rows a second time in every
-- create (bench P1: what admission cost a create). Removals stay counted by
-- `capture_queue_removed` (dispatches, deletes, cascades).

-- What the last admission on this row admitted (for a row made by it, what
-- was wanted; `capture_admit` answers the least of that and `max_queued`).
-- Read only by the statement that wrote it, through its RETURNING: an
-- upsert cannot return the row as it was (PostgreSQL 18's RETURNING OLD;
-- this service runs on 15).
alter table capture_org add column admitted integer not null default 0;

-- PL/pgSQL, not SQL: a SQL function that cannot be inlined (this one
-- writes) is planned again in every statement that calls it, a PL/pgSQL
-- one keeps its plan for the session.
create function capture_admit(organization_ids bigint[], wanted integer[], max_queued bigint)
returns table (organization_id bigint, admitted integer, queued integer, dispatch_interval_secs double precision)
language plpgsql volatile
as $$
#variable_conflict use_column
begin
    return query
    insert into capture_org as c (organization_id, queued, has_queued, admitted)
    select r.o, least(r.w, coalesce(max_queued, r.w)), least(r.w, coalesce(max_queued, r.w)) > 0, r.w
    from unnest(organization_ids, wanted) as r(o, w)
    order by r.o
    on conflict (organization_id) do update
    set queued = c.queued + least(excluded.admitted, greatest(0, coalesce(max_queued - c.queued, excluded.admitted))),
        has_queued = c.queued + least(excluded.admitted, greatest(0, coalesce(max_queued - c.queued, excluded.admitted))) > 0,
        admitted = least(excluded.admitted, greatest(0, coalesce(max_queued - c.queued, excluded.admitted)))
    returning c.organization_id, least(c.admitted, max_queued)::int, c.queued, c.dispatch_interval_secs;
end
$$;

drop trigger capture_queue_added on capture_queue;

-- What is left of the counting trigger: removals.
create or replace function capture_queue_count() returns trigger
language plpgsql as $$
begin
    update capture_org c
    set queued = greatest(c.queued - gone.n, 0), has_queued = c.queued - gone.n > 0
    from (select organization_id, count(*)::int as n from removed group by organization_id) gone
    where c.organization_id = gone.organization_id;
    return null;
end
$$;
