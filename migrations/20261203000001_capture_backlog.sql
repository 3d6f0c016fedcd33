-- SPEC §12: the capture backlog lives in PostgreSQL; SQS holds only what
-- may run now. An attempt is *queued* (a `capture_queue` row) from the
-- commit that starts it until the dispatcher grants it a capture slot (a
-- `capture_slot` row) and writes its outbox message; it holds the slot until
-- it ends. The dispatcher (`service::dispatch`, `db::capture`) runs on any
-- replica, one pass at a time across all of them (an advisory lock), so the
-- limits it counts here hold however many replicas run.

-- Attempts waiting for a capture slot. An import has one current attempt,
-- so at most one row. The body is the attempt's queue message (SPEC §7),
-- written when the attempt starts and published once it is dispatched.
create table capture_queue (
    page_import_id varchar(255) primary key references page_import (id) on update cascade on delete cascade,
    attempt integer not null,
    organization_id bigint not null,
    body text not null,
    -- As the outbox message will carry them (`outbox_message`).
    message_group_id varchar(128) not null,
    deduplication_id varchar(128) not null,
    -- Oldest first within an organization.
    seq bigint generated always as identity
);

create index capture_queue_org_seq_idx on capture_queue (organization_id, seq);

-- Each organization's place in the round robin and its queued count.
create table capture_org (
    organization_id bigint primary key references organization (id) on update cascade on delete cascade,
    -- Rows of `capture_queue` of this organization, kept by the triggers
    -- below (cascaded deletes included): what admission (`ORG_MAX_QUEUED`)
    -- reads.
    queued integer not null default 0,
    -- queued > 0: the organization takes part in the round robin. A column
    -- of its own, changed only when the backlog empties or starts, so that
    -- the many updates of `queued` (every create locks and counts its
    -- organization's row) touch no indexed value and stay HOT: one busy
    -- organization's row does not leave thousands of dead index entries.
    has_queued boolean not null default false,
    -- The dispatcher's turn number at this organization's last dispatch (0:
    -- never dispatched). The next slot goes to the smallest turn among the
    -- organizations with queued attempts.
    last_turn bigint not null default 0,
    last_dispatched_at timestamptz,
    -- Seconds between this organization's dispatches, smoothed: the
    -- `Retry-After` of its 429.
    dispatch_interval_secs double precision
) with (fillfactor = 50); -- room on the page for those HOT updates

-- The round robin's scan: organizations with queued attempts, least
-- recently dispatched first. Only organizations that have something queued
-- are in it, so choosing never scans the backlog.
create index capture_org_turn_idx on capture_org (last_turn, organization_id) where has_queued;

create sequence capture_turn_seq;

-- Attempts holding a capture slot, from the dispatch that granted it until
-- the attempt ends. A slot whose attempt is no longer its import's live
-- `processing` attempt (ended, superseded, deleted) is released by the next
-- dispatch pass (`db::capture::release_ended_slots`); a row deleted outright
-- takes its slot with it (the cascade).
create table capture_slot (
    page_import_id varchar(255) primary key references page_import (id) on update cascade on delete cascade,
    attempt integer not null,
    organization_id bigint not null,
    granted_at timestamptz not null default now()
);

-- `capture_org.queued` follows `capture_queue`, whichever statement (or
-- cascade from `page_import`, `project`, `organization`) adds or removes
-- rows. Statement-level, so a batch touches each organization once, in
-- organization order (the order creates lock them in).
create function capture_queue_count() returns trigger
language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into capture_org as c (organization_id, queued, has_queued)
        select organization_id, count(*)::int, true from added group by organization_id order by organization_id
        on conflict (organization_id) do update set queued = c.queued + excluded.queued, has_queued = true;
    else
        update capture_org c
        set queued = greatest(c.queued - gone.n, 0), has_queued = c.queued - gone.n > 0
        from (select organization_id, count(*)::int as n from removed group by organization_id) gone
        where c.organization_id = gone.organization_id;
    end if;
    return null;
end
$$;

create trigger capture_queue_added
    after insert on capture_queue
    referencing new table as added
    for each statement execute function capture_queue_count();

create trigger capture_queue_removed
    after delete on capture_queue
    referencing old table as removed
    for each statement execute function capture_queue_count();

-- Existing deployments: every organization gets its row, and every live
-- `processing` import's current attempt was published already (or sits in
-- the outbox, which publishes it regardless): it holds a slot.
insert into capture_org (organization_id) select id from organization;

insert into capture_slot (page_import_id, attempt, organization_id)
select p.id, p.attempt, p.organization_id
from page_import p
where p.status = '0' and p.deleted_at is null;
