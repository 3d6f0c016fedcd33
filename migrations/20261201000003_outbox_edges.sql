-- Outbox edges (issue 14).
--
-- `deferred`: the row waits out a backoff after a failed publish. When SQS is
-- reachable again (a breaker closes, a relay batch gets through) such rows are
-- made due at once instead of waiting out their backoff. A relay's claim
-- clears it, so a row being published right now is never made due under its
-- publisher (which would publish it twice).
alter table outbox_message add column deferred boolean not null default false;
create index outbox_message_deferred_idx on outbox_message (queue) where deferred;

-- The claim takes the earliest-due rows in due order: one index range scan
-- that stops after `limit` rows, whatever the backlog (the old claim ordered
-- by id and had to read every due row to sort them).
drop index outbox_message_available_idx;
create index outbox_message_due_idx on outbox_message (available_at, id);
