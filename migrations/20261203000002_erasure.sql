-- SPEC §13: a deleted import leaves nothing behind in S3.
--
-- The deletion ledger. PostgreSQL writes it itself, in the transaction that
-- deletes: a soft delete (the API's DELETE), a row deleted in SQL, and the
-- seed's cascades from organization and project all pass through the
-- triggers below, so no deletion path can skip it. It has no foreign key:
-- it outlives the rows it names. An entry leaves only when its erasure
-- finished (`db::erasure::finish`).
create table page_import_deletion (
    page_import_id varchar(255) primary key,
    organization_id bigint not null,
    project_id bigint not null,
    -- The soft delete's time, or the row delete's when there was none.
    deleted_at timestamptz not null,
    -- The soft delete's actor, or `db:{session user}` for a row delete.
    deleted_by varchar(50),
    -- true while the row is only soft-deleted: erased ERASE_AFTER_DELETE_SECS
    -- after deleted_at. false once the row is gone: erased at the next pass.
    soft boolean not null,
    -- When the row went (or, for a soft delete, when the entry was written).
    recorded_at timestamptz not null default now(),
    -- The newest dispatch of any attempt, read before the attempts' rows
    -- cascade away: late writers are awaited until CAPTURE_TIMEOUT_SECS after it.
    last_dispatched_at timestamptz,
    -- The pass working this entry, until leased_until. `picked_at` is the
    -- first pick-up: from then on the erasure cannot be undone.
    lease text,
    leased_until timestamptz,
    picked_at timestamptz,
    -- Not before this: the late writers' window, or a failure's backoff.
    retry_at timestamptz,
    -- Callbacks that arrived for the import after it was deleted: a pass that
    -- read another count does not finish (their objects may be newer).
    late_writes integer not null default 0,
    objects_deleted bigint not null default 0,
    failures integer not null default 0
);

-- The pass claims the oldest due entries first.
create index page_import_deletion_recorded_idx on page_import_deletion (recorded_at);

-- The audit trail of finished erasures: ids and times only, no URL, hash or
-- other user content.
create table page_import_erasure (
    id varchar(255) primary key,
    organization_id bigint not null,
    project_id bigint not null,
    deleted_at timestamptz not null,
    deleted_by varchar(50),
    erased_at timestamptz not null,
    objects_deleted bigint not null
);

-- A soft delete schedules the erasure; undoing it by hand (deleted_at back
-- to null) cancels it, unless an erasure pass has already picked it up.
create function page_import_deletion_on_soft_delete() returns trigger
language plpgsql as $$
begin
    if old.deleted_at is null and new.deleted_at is not null then
        insert into page_import_deletion (page_import_id, organization_id, project_id, deleted_at, deleted_by, soft)
        values (new.id, new.organization_id, new.project_id, new.deleted_at, new.deleted_by, true)
        on conflict (page_import_id) do nothing;
    elsif old.deleted_at is not null and new.deleted_at is null then
        if exists (select 1 from page_import_deletion where page_import_id = new.id and picked_at is not null) then
            raise exception 'page_import % is being erased; its delete cannot be undone', new.id
                using errcode = 'object_in_use';
        end if;
        delete from page_import_deletion where page_import_id = new.id;
    end if;
    return null;
end
$$;

create trigger page_import_deletion_on_soft_delete
    after update of deleted_at on page_import
    for each row when (old.deleted_at is distinct from new.deleted_at)
    execute function page_import_deletion_on_soft_delete();

-- Records one row that goes, however it goes: its last dispatch is read from
-- its attempts, which the cascade removes right after.
create function page_import_deletion_record(p page_import) returns void
language sql as $$
    insert into page_import_deletion
        (page_import_id, organization_id, project_id, deleted_at, deleted_by, soft, last_dispatched_at)
    values (
        p.id, p.organization_id, p.project_id,
        coalesce(p.deleted_at, now()),
        coalesce(p.deleted_by, left('db:' || session_user, 50)),
        false,
        (select max(a.dispatched_at) from page_import_attempt a where a.page_import_id = p.id)
    )
    on conflict (page_import_id) do update
        set soft = false,
            recorded_at = now(),
            last_dispatched_at = greatest(page_import_deletion.last_dispatched_at, excluded.last_dispatched_at);
$$;

-- A row delete: the API's never, SQL's, and the seed's cascades from
-- organization and project. BEFORE, so that the attempts are still there.
create function page_import_deletion_on_delete() returns trigger
language plpgsql as $$
begin
    perform page_import_deletion_record(old);
    return old;
end
$$;

create trigger page_import_deletion_on_delete
    before delete on page_import
    for each row execute function page_import_deletion_on_delete();

-- TRUNCATE fires no row trigger: it records every row it is about to remove
-- itself, so that path cannot skip the ledger either.
create function page_import_deletion_on_truncate() returns trigger
language plpgsql as $$
begin
    perform page_import_deletion_record(p) from page_import p;
    return null;
end
$$;

create trigger page_import_deletion_on_truncate
    before truncate on page_import
    for each statement execute function page_import_deletion_on_truncate();
