-- SPEC §13: entries are claimed in the order they fell due, and neither the
-- claim nor the pending count reads an entry that is not due.
--
-- A row delete is due when it was recorded; a soft delete
-- ERASE_AFTER_DELETE_SECS after its `deleted_at` (a setting, not known
-- here). Each kind has its own index on the time its due time follows, so
-- a claim reads the due head of each, and a month of soft deletes not yet
-- due is never read.
drop index page_import_deletion_recorded_idx;
create index page_import_deletion_row_deleted_idx on page_import_deletion (recorded_at) where not soft;
create index page_import_deletion_soft_deleted_idx on page_import_deletion (deleted_at) where soft;

-- An undo of a soft delete by hand (deleted_at back to null) is refused once
-- a pass has picked the erasure up. The check now locks the ledger entry, so
-- an undo that races a claim waits for the claim's commit and sees it,
-- rather than reading the entry as it was before the claim and deleting it
-- under a pass that is about to erase the import's objects.
create or replace function page_import_deletion_on_soft_delete() returns trigger
language plpgsql as $$
begin
    if old.deleted_at is null and new.deleted_at is not null then
        insert into page_import_deletion (page_import_id, organization_id, project_id, deleted_at, deleted_by, soft)
        values (new.id, new.organization_id, new.project_id, new.deleted_at, new.deleted_by, true)
        on conflict (page_import_id) do nothing;
    elsif old.deleted_at is not null and new.deleted_at is null then
        perform 1 from page_import_deletion where page_import_id = new.id for update;
        if exists (select 1 from page_import_deletion where page_import_id = new.id and picked_at is not null) then
            raise exception 'page_import % is being erased; its delete cannot be undone', new.id
                using errcode = 'object_in_use';
        end if;
        delete from page_import_deletion where page_import_id = new.id;
    end if;
    return null;
end
$$;
