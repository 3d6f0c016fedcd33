-- The capture backlog names each attempt's organization: the round robin
-- finds an organization's queued attempts (`capture_queue`) and counts its
-- slots (`capture_slot`) by it. Without a key, an organization id changed
-- under the seed's `on update cascade` renamed the organization's
-- `capture_org` row but not these, and its backlog was never dispatched.
alter table capture_queue add constraint capture_queue_organization_id_fkey
    foreign key (organization_id) references organization (id) on update cascade on delete cascade;
alter table capture_slot add constraint capture_slot_organization_id_fkey
    foreign key (organization_id) references organization (id) on update cascade on delete cascade;
