-- SPEC §15: import sets. A set is its shared settings and its members, each
-- an ordinary `page_import` (SPEC §7 keeps the seed's table to its columns:
-- membership lives here). Decision 0047.
create table page_import_set (
    id varchar(255) primary key,
    organization_id bigint not null references organization (id) on update cascade on delete cascade,
    project_id bigint not null references project (id) on update cascade on delete cascade,
    source_url text not null,
    ready_selector varchar(512),
    locale varchar(35) not null default 'en-US',
    time_zone varchar(64) not null default 'UTC',
    consent consent_mode not null default 'decline',
    created_at timestamptz not null default current_timestamp,
    updated_at timestamptz not null default current_timestamp,
    deleted_at timestamptz,
    created_by varchar(50) not null,
    updated_by varchar(50) not null,
    deleted_by varchar(50)
);

-- The list, newest first, keyset-paginated (as page_import's).
create index page_import_set_project_keyset_idx
    on page_import_set (project_id, created_at, id) where deleted_at is null;
create index page_import_set_org_project_idx on page_import_set (organization_id, project_id);

-- A member is one import of one set, at its place in the set's order.
create table page_import_set_member (
    set_id varchar(255) not null references page_import_set (id) on update cascade on delete cascade,
    page_import_id varchar(255) not null unique references page_import (id) on update cascade on delete cascade,
    ord integer not null,
    primary key (set_id, ord)
);

-- A set's slot (SPEC §15 "Slots"): the set's first attempts hold one capture
-- slot between them. Each member's attempt keeps its own `capture_slot` row
-- (released as any attempt's, `db::capture::release_ended_slots`), marked
-- with the set; the rows of one set count as one slot in flight, so the
-- set's slot frees when its last member's row is released.
alter table capture_slot add column set_id varchar(255);

-- The attempts a capture message names (`capture_message_attempt`,
-- migration `…_capture_message_attempt.sql`): a set's message
-- (deduplication id `set:{setId}`, `page_import_contract::job::
-- set_deduplication_id`) names its members' first attempts. So stamping
-- `dispatched_at`, ending a refused message's attempts and dropping the
-- messages of ended attempts (`db::outbox`) treat a set's message as the
-- attempts it carries. Stable now (it reads the members), still one SELECT
-- that the planner inlines.
create or replace function capture_message_attempt(queue text, deduplication_id text)
returns table (page_import_id text, attempt int)
language sql stable parallel safe
as $$
    select split_part($2, ':', 1)::text,
           case when split_part($2, ':', 2) ~ '^[0-9]{1,9}$' then split_part($2, ':', 2)::int end
    where $1 = 'page_import' and split_part($2, ':', 2) ~ '^[0-9]{1,9}$'
    union all
    select m.page_import_id::text, 1
    from page_import_set_member m
    where $1 = 'page_import' and left($2, 4) = 'set:' and m.set_id = substr($2, 5)
$$;

-- A set whose members are all gone (erased, SPEC §13, or deleted in SQL)
-- goes with them when it was deleted: a deleted set leaves nothing behind.
create function page_import_set_gone() returns trigger
language plpgsql as $$
begin
    delete from page_import_set s
    where s.id in (select distinct set_id from old_rows)
      and s.deleted_at is not null
      and not exists (select 1 from page_import_set_member m where m.set_id = s.id);
    return null;
end
$$;

create trigger page_import_set_member_gone
    after delete on page_import_set_member
    referencing old table as old_rows
    for each statement execute function page_import_set_gone();
