-- When an import's erasure falls due (SPEC §13), in one place: a row
-- deleted outright at once (when its ledger entry was recorded), a
-- soft-deleted one ERASE_AFTER_DELETE_SECS after its `deleted_at` (a
-- setting, passed in). The claim (`db::erasure::claim`) and the pending
-- count (`db::erasure::pending`) both ask these two functions. Each is one
-- SQL expression, so the planner inlines it: the second is the same rule
-- as a bound on `deleted_at`, the form the index of soft deletes
-- (`page_import_deletion_soft_deleted_idx`) can be scanned by, so neither
-- reads an entry that is not due.
create function erasure_due_at(soft boolean, recorded_at timestamptz, deleted_at timestamptz,
                               erase_after_secs double precision)
returns timestamptz
-- Stable, as `timestamptz + interval` is (it reads the session's time
-- zone): a function declared more stable than its body is not inlined.
language sql stable parallel safe
as $$ select case when soft then deleted_at + make_interval(secs => erase_after_secs) else recorded_at end $$;

create function erasure_soft_deleted_due_before(erase_after_secs double precision)
returns timestamptz
language sql stable parallel safe
as $$ select now() - make_interval(secs => erase_after_secs) $$;
