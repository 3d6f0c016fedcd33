-- One row per attempt of an import (SPEC §7 "Attempts"): the history support
-- staff read, and what the sweeper times out. The seed's page_import table
-- keeps exactly its columns; its `attempt` and `nonce` stay the fence.
create table page_import_attempt (
    page_import_id varchar(255) not null references page_import (id) on update cascade on delete cascade,
    attempt integer not null,
    -- create | sweeper (the previous attempt timed out) | retryable (the worker
    -- reported a transient failure) | manual (POST …/retry by a user)
    reason varchar(16) not null check (reason in ('create', 'sweeper', 'retryable', 'manual')),
    started_by varchar(50) not null,
    started_at timestamptz not null default current_timestamp,
    -- When SQS first accepted the attempt's message: its clock starts here,
    -- so an SQS outage does not use up attempts.
    dispatched_at timestamptz,
    finished_at timestamptz,
    outcome varchar(24) check (outcome in ('completed', 'failed', 'timed_out', 'retryable_failure')),
    error_message text,
    -- The retryable callback that ended this attempt: an exact replay of it
    -- (same webhook-id, same body) is answered `replayed`.
    retry_webhook_id varchar(256),
    retry_request_hash varchar(64),
    primary key (page_import_id, attempt)
);

-- The sweeper's scan: dispatched attempts still running, oldest first.
create index page_import_attempt_running_idx
    on page_import_attempt (dispatched_at) where finished_at is null and dispatched_at is not null;

-- Imports that exist already: their current attempt. An attempt whose
-- message is still in the outbox is not dispatched yet.
insert into page_import_attempt (page_import_id, attempt, reason, started_by, started_at, dispatched_at,
                                 finished_at, outcome, error_message)
select p.id, p.attempt, 'create', p.created_by, p.created_at,
       case when exists (select 1 from outbox_message o
                         where o.queue = 'page_import' and o.deduplication_id = p.id || ':' || p.attempt)
            then null else p.created_at end,
       case when p.status <> '0' then p.updated_at end,
       case p.status when '1' then 'completed' when '2' then 'failed' end,
       p.error_message
from page_import p;

-- The history follows the row's own transitions, whichever code path (or
-- replica, or operator) makes them. Every transition sets `updated_by`, and
-- that names why an attempt started: system:sweeper after a timeout,
-- system:capture-worker after a retryable failure, a user for a manual retry.
create function page_import_attempt_track() returns trigger
language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into page_import_attempt (page_import_id, attempt, reason, started_by)
        values (new.id, new.attempt, 'create', new.created_by);
        return null;
    end if;
    if new.attempt <> old.attempt then
        update page_import_attempt
        set finished_at = now(),
            outcome = case when new.updated_by = 'system:sweeper' then 'timed_out' else 'retryable_failure' end
        where page_import_id = new.id and attempt = old.attempt and finished_at is null;
        insert into page_import_attempt (page_import_id, attempt, reason, started_by)
        values (new.id, new.attempt,
                case new.updated_by
                    when 'system:sweeper' then 'sweeper'
                    when 'system:capture-worker' then 'retryable'
                    else 'manual'
                end,
                new.updated_by);
    elsif old.status = '0' and new.status <> '0' then
        update page_import_attempt
        set finished_at = now(),
            outcome = case
                when new.status = '1' then 'completed'
                when new.updated_by = 'system:sweeper' then 'timed_out'
                else 'failed'
            end,
            error_message = new.error_message
        where page_import_id = new.id and attempt = new.attempt;
    end if;
    return null;
end
$$;

create trigger page_import_attempt_created
    after insert on page_import
    for each row execute function page_import_attempt_track();

create trigger page_import_attempt_transition
    after update of attempt, status on page_import
    for each row
    when (new.attempt <> old.attempt or new.status <> old.status)
    execute function page_import_attempt_track();

-- The old sweeper index (by creation time) is replaced by the attempts' own.
drop index page_import_processing_created_idx;
