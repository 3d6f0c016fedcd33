-- SPEC §12: an attempt whose message SQS refused as the sender's fault ends
-- failed with the outcome `dispatch_rejected` (`db::outbox::reject`).
alter table page_import_attempt drop constraint page_import_attempt_outcome_check;
alter table page_import_attempt add constraint page_import_attempt_outcome_check
    check (outcome in ('completed', 'failed', 'timed_out', 'retryable_failure', 'dispatch_rejected'));
