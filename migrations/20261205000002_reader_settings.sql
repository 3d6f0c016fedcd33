-- The page its reader sees (SPEC §14): the device, colour scheme, language,
-- clock and consent choice an import is captured with, stored with it so
-- that every attempt (retries included) captures with the same. Existing
-- rows take the defaults, which are what their captures used. Adding a
-- column with a constant default rewrites no row (PostgreSQL 11+).
create type color_scheme as enum ('light', 'dark');
create type consent_mode as enum ('decline', 'keep');

alter table page_import
    add column viewport_mobile boolean not null default false,
    add column color_scheme color_scheme not null default 'light',
    -- A BCP 47 tag in its canonical case (`domain::reader::Locale`).
    add column locale varchar(35) not null default 'en-US',
    -- An IANA zone name (`domain::reader::TimeZone`).
    add column time_zone varchar(64) not null default 'UTC',
    add column consent consent_mode not null default 'decline';
