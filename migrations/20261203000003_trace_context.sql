-- One trace per attempt (SPEC §9). Each attempt records the W3C
-- `traceparent` its capture message carries: the create's or the manual
-- retry's request trace, or, for a re-dispatched attempt, a trace of its own
-- linked to the create's (attempt 1's). The dispatcher copies it onto the
-- outbox row, and the relay sends it as the SQS message attribute
-- `traceparent`. Null for attempts started before this migration: their
-- messages carry none, and the worker starts a trace of its own.
alter table page_import_attempt add column traceparent text;
alter table outbox_message add column traceparent text;
