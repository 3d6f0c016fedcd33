-- Change notifications leave the writing transactions: a `pg_notify` inside
-- a transaction takes PostgreSQL's instance-wide notify lock at commit and
-- holds it through the commit's WAL flush, which serialized every writer of
-- `page_import` (bench N). The service now announces changed ids after the
-- commit, batched, from one notifier per process (`changes::Notifier`), on
-- the same channel `page_import_changed`.
drop trigger page_import_changed on page_import;
drop function page_import_notify_change();
