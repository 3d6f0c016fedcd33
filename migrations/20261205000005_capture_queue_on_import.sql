-- SPEC §12: a queued attempt is marked on its own history row
-- (`page_import_attempt.queued_seq`), not kept as a row of a table of its
-- own. The queue row repeated what the import and attempt rows hold: its
-- message was built from the import's fields at the create and stored
-- beside it. A create now writes the import row and its attempt row, queued
-- (one index entry more), where it wrote a queue row with its message, two
-- index entries and two foreign-key checks too (bench P1: what the backlog
-- cost a create). The message is built when the attempt is dispatched,
-- from the rows as they are then (`db::capture::dispatch`). SPEC §7 keeps
-- the seed's `page_import` to its columns; what an attempt needs lives on
-- `page_import_attempt`.

-- The attempt's organization (its import's), for the queue's index; kept
-- by the key's `on update cascade` as the import's is. Set on every attempt
-- started since this migration (null on older ones, which are not queued).
alter table page_import_attempt
    add column organization_id bigint references organization (id) on update cascade on delete cascade,
    -- Set (from `page_import_queued_seq`, oldest first) while the attempt
    -- waits for a capture slot: from the statement that admitted it (a
    -- create, a next attempt) until a dispatch pass takes it off the queue
    -- (dispatched, or dropped: its import no longer live, or moved past it)
    -- or its import is soft-deleted.
    add column queued_seq bigint;

create sequence page_import_queued_seq;

-- Each organization's queued attempts, oldest first: what the round robin
-- (`db::capture::pick`) reads. Only queued attempts are in it.
create index page_import_attempt_queued_idx on page_import_attempt (organization_id, queued_seq)
    where queued_seq is not null;

-- Existing deployments: the waiting attempts keep their places (an attempt
-- with no history row, written by a replica older than the history, gets
-- one).
insert into page_import_attempt (page_import_id, attempt, reason, started_by)
select q.page_import_id, q.attempt, case when q.attempt = 1 then 'create' else 'sweeper' end, p.created_by
from capture_queue q join page_import p on p.id = q.page_import_id
on conflict (page_import_id, attempt) do nothing;

update page_import_attempt a set organization_id = q.organization_id, queued_seq = q.seq
from capture_queue q
where q.page_import_id = a.page_import_id and q.attempt = a.attempt;

select setval('page_import_queued_seq', coalesce((select max(seq) from capture_queue), 0) + 1, false);

drop table capture_queue;
drop function capture_queue_count();

update capture_org c
set queued = n.queued, has_queued = n.queued > 0
from (
    select o.organization_id, count(a.page_import_id)::int as queued
    from capture_org o
    left join page_import_attempt a on a.organization_id = o.organization_id and a.queued_seq is not null
    group by o.organization_id
) n
where n.organization_id = c.organization_id;

-- `capture_org.queued` counts the attempts whose `queued_seq` is set:
-- admission (`db::capture::admitting!`) adds what it admits, in the
-- statement that queues it; an attempt leaving the queue, whichever
-- statement clears its `queued_seq` (a dispatch, a soft delete of its
-- import) or deletes it (a delete of its import in SQL, a cascade from a
-- project or an organization), is taken off here, in the same
-- transaction. Statement-level, so a statement touches each organization's
-- row once (row-level, a statement that took n attempts of one
-- organization off the queue updated its row n times, and each update
-- walked the chain of the row's earlier versions: 64 000 took 33 s). An update statement of `page_import_attempt` that clears no
-- `queued_seq` finds nothing to count (measured on `page_import`: +30 µs on
-- a one-row update).
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
              from old_rows o join new_rows n on n.page_import_id = o.page_import_id and n.attempt = o.attempt
              where o.queued_seq is not null and n.queued_seq is distinct from o.queued_seq
              group by o.organization_id) g
        where c.organization_id = g.organization_id;
    end if;
    return null;
end
$$;

create trigger page_import_attempt_dequeued
    after update on page_import_attempt
    referencing old table as old_rows new table as new_rows
    for each statement execute function capture_dequeued();

create trigger page_import_attempt_queued_deleted
    after delete on page_import_attempt
    referencing old table as old_rows
    for each statement execute function capture_dequeued();

-- Admission is written into the statements that queue attempts
-- (`db::capture::admitting!`): the function call cost 4 % of a create.
drop function capture_admit(bigint[], integer[], bigint);
