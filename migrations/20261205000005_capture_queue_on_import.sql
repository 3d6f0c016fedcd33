-- SPEC §12: an import's queued attempt is marked on the import's own row
-- (`queued_seq`), not kept as a row of a table of its own. An import has
-- one current attempt, so at most one place in the queue, and the queue
-- row repeated what the import row holds: its message was built from the
-- row's fields at the create and stored beside it. A create now writes
-- the import row, its attempt row and one index entry of the queue below,
-- where it wrote a queue row with its message, two index entries and two
-- foreign-key checks too (bench P1: what the backlog cost a create). The
-- message is built when the attempt is dispatched, from the row as it is
-- then (`db::capture::dispatch`).

-- Set (from `page_import_queued_seq`, oldest first) when an attempt is
-- admitted to the queue: a create's first attempt, every next one;
-- cleared when the attempt is dispatched or the import is soft-deleted.
alter table page_import add column queued_seq bigint;

create sequence page_import_queued_seq;

-- Each organization's queued attempts, oldest first: what the round robin
-- (`db::capture::pick`) reads. Only queued imports are in it.
create index page_import_queued_idx on page_import (organization_id, queued_seq) where queued_seq is not null;

-- Existing deployments: the queued current attempts keep their places; an
-- entry of an attempt its import has moved past was never dispatched.
update page_import p set queued_seq = q.seq
from capture_queue q
where q.page_import_id = p.id and q.attempt = p.attempt and page_import_running(p.status, p.deleted_at);

select setval('page_import_queued_seq', coalesce((select max(seq) from capture_queue), 0) + 1, false);

drop table capture_queue;
drop function capture_queue_count();

update capture_org c
set queued = n.queued, has_queued = n.queued > 0
from (
    select o.organization_id, count(p.id)::int as queued
    from capture_org o left join page_import p on p.organization_id = o.organization_id and p.queued_seq is not null
    group by o.organization_id
) n
where n.organization_id = c.organization_id;

-- `capture_org.queued` counts the imports whose `queued_seq` is set:
-- admission (`db::capture::admitting!`) adds what it admits, in the
-- statement that sets `queued_seq`; an import leaving the queue, whichever
-- statement clears its `queued_seq` (a dispatch, a soft delete), sets a new
-- one (a next attempt of an import still queued: it leaves and joins
-- again, admitted again) or deletes it (a delete in SQL, a cascade from a
-- project or an organization), is taken off here, in the same transaction. Statement-level, so a statement
-- touches each organization's row once (row-level, a statement that took
-- n imports of one organization off the queue updated its row n times, and
-- each update walked the chain of the row's earlier versions: 64 000 took
-- 33 s). An update statement of `page_import` that clears no `queued_seq`
-- finds nothing to count (measured: +30 µs on a one-row update).
create function capture_dequeued() returns trigger
language plpgsql as $$
begin
    if tg_op = 'DELETE' then
        update capture_org c
        set queued = greatest(c.queued - g.n, 0), has_queued = c.queued - g.n > 0
        from (select organization_id, count(*)::int as n from old_rows where queued_seq is not null
              group by organization_id) g
        where c.organization_id = g.organization_id;
    else
        update capture_org c
        set queued = greatest(c.queued - g.n, 0), has_queued = c.queued - g.n > 0
        from (select o.organization_id, count(*)::int as n
              from old_rows o join new_rows n on n.id = o.id
              where o.queued_seq is not null and n.queued_seq is distinct from o.queued_seq
              group by o.organization_id) g
        where c.organization_id = g.organization_id;
    end if;
    return null;
end
$$;

create trigger page_import_dequeued
    after update on page_import
    referencing old table as old_rows new table as new_rows
    for each statement execute function capture_dequeued();

create trigger page_import_queued_deleted
    after delete on page_import
    referencing old table as old_rows
    for each statement execute function capture_dequeued();

-- Admission is written into the statements that queue attempts
-- (`db::capture::admitting!`): the function call cost 4 % of a create.
drop function capture_admit(bigint[], integer[], bigint);
