-- The attempt history (`page_import_attempt`) is written by the statements
-- that make each transition, with the reason and outcome their code passes
-- (`domain::lifecycle`), no longer by a trigger that inferred them from the
-- text of `updated_by`: renaming an actor could silently change the
-- recorded reasons.
drop trigger page_import_attempt_created on page_import;
drop trigger page_import_attempt_transition on page_import;
drop function page_import_attempt_track();
