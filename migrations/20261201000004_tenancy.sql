-- Tenancy, written once: the organizations a caller (the JWT's `sub`) may
-- see. Every visibility check in the service reads it:
--   and x.organization_id in (select organization_id from member_organizations($subject))
-- A one-statement SQL function that PostgreSQL inlines into the calling
-- query, so plans are those of the join it stands for (a semi-join on
-- organization_member's keys), with no call per row.
create function member_organizations(subject text)
returns table (organization_id bigint)
language sql stable parallel safe
as $$
    select m.organization_id from organization_member m where m.subject = member_organizations.subject
$$;
