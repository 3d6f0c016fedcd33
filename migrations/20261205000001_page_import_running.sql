-- The one definition of an import whose current attempt may still run:
-- processing (status '0', `JobStatus::Processing`) and not deleted. Every
-- statement that asks it calls this function. It is a single SQL
-- expression, immutable, so the planner inlines it: the statements' plans
-- and indexes are those of the expression written out.
create function page_import_running(status page_import_status, deleted_at timestamptz)
returns boolean
language sql immutable parallel safe
as $$ select status = '0' and deleted_at is null $$;
