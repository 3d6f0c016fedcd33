-- Every change to a page_import row is announced on the channel
-- `page_import_changed` with the row's id as payload, at commit, to every
-- listening replica: `/page-imports/{id}/events` streams re-read the row
-- when it changes, whichever replica (webhook, sweeper, delete, retry)
-- committed the change. Inserts need no announcement: a stream only exists
-- for a row that was already there.
create function page_import_notify_change() returns trigger
language plpgsql as $$
begin
    if tg_op = 'DELETE' then
        perform pg_notify('page_import_changed', old.id);
    else
        perform pg_notify('page_import_changed', new.id);
    end if;
    return null;
end
$$;

create trigger page_import_changed
    after update or delete on page_import
    for each row execute function page_import_notify_change();
