#!/usr/bin/env bash
# C: query plans that must not depend on table size (issue 14 §9).
#   bench/plans.sh DATABASE_URL [--smoke]
# Needs a migrated, otherwise idle database (bench/run provides one). Prints
# three tables:
#  1. the relay's claim (LIMIT 100) with 0 / 10 k / 100 k / 1 M due rows, the
#     claim before this change (`id IN (…) ORDER BY id`, index on available_at)
#     against the one in src/db/outbox.rs: median execution time of 5 runs,
#     each in a transaction rolled back, and the buffers it touched;
#  2. a coalesced by-id read prepared while page_import held one row and
#     executed after it grew to 100 k rows without ANALYZE: the join shape
#     as a generic plan, the same with sequential scans off, and a custom
#     plan per call; then the shape now (a primary-key lookup in a lateral
#     subquery) as a generic plan, with sequential scans on and off (now);
#  3. the create statement's generic plan made on a one-project database and
#     run after `project` grew, in the shape before (a join) and now (a
#     parameterized lateral lookup), with sequential scans on and off.
set -euo pipefail
URL=$1
SMOKE=${2:-}
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql "$URL" -X -q -v ON_ERROR_STOP=1 -At)
if [ "$SMOKE" = --smoke ]; then SIZES="0 10000"; GROW=10000; else SIZES="0 10000 100000 1000000"; GROW=100000; fi

OLD_CLAIM="update outbox_message o set available_at = now() + interval '30 s', attempts = o.attempts + 1
  where o.id in (select id from outbox_message where available_at <= now() order by id limit 100 for update skip locked)"
NEW_CLAIM="with due as materialized (select id from outbox_message where available_at <= now()
  order by available_at, id limit 100 for update skip locked)
  update outbox_message o set available_at = now() + interval '30 s', attempts = o.attempts + 1, deferred = false
  from due where o.id = due.id"

# explain_ms SQL [SETUP] → "ms buffers" of one run, rolled back.
explain() {
  "${PSQL[@]}" 2>/dev/null <<SQL | awk '/Execution Time/ {t=$3} /Buffers: shared/ && !b {b=$0} END {sub(/^ */, "", b); print t "\t" b}'
begin;
$2
explain (analyze, buffers) $1;
rollback;
SQL
}

median_of_5() {
  local sql=$1 setup=${2:-} out times=() buffers=
  for _ in 1 2 3 4 5; do
    out=$(explain "$sql" "$setup")
    times+=("${out%%$'\t'*}")
    buffers=${out#*$'\t'}
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 3p | tr '\n' '\t'
  echo "$buffers"
}

echo
echo "### C1. Relay claim (LIMIT 100) against the backlog"
echo
echo "Each row count is due rows, plus as many rows not due (leased or backing"
echo "off) with lower ids, as in an SQS outage; statistics as left by TRUNCATE"
echo "(the table grew before autovacuum analyzed it) and after ANALYZE."
echo
echo "| due rows | stats | before: ms | before: buffers | after: ms | after: buffers |"
echo "|---|---|---|---|---|---|"
for n in $SIZES; do
  for stats in none analyzed; do
    "${PSQL[@]}" -c "truncate outbox_message" -c "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
      select 'page_import', '{}', '1', g::text, now() + interval '1 hour' from generate_series(1, $n) g" \
      -c "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
      select 'page_import', '{}', '1', g::text, now() - interval '1 minute' + g * interval '1 microsecond' from generate_series(1, $n) g"
    [ $stats = analyzed ] && "${PSQL[@]}" -c "analyze outbox_message"
    # The old claim with its old index.
    old=$(median_of_5 "$OLD_CLAIM" "create index tmp_available_idx on outbox_message (available_at); drop index outbox_message_due_idx;")
    new=$(median_of_5 "$NEW_CLAIM")
    printf '| %s | %s | %s | %s | %s | %s |\n' "$n" "$stats" "$(cut -f1 <<<"$old")" "$(cut -f2 <<<"$old")" "$(cut -f1 <<<"$new")" "$(cut -f2 <<<"$new")"
  done
done
"${PSQL[@]}" -c "truncate outbox_message"

READ="select pi.id from unnest(\$1::text[], \$2::text[]) with ordinality as r(id, subject, ord)
  join page_import pi on pi.id = r.id where pi.deleted_at is null
  and exists (select 1 from organization_member m where m.organization_id = pi.organization_id and m.subject = r.subject)"
# The read now (src/db/page_import.rs): a primary-key lookup per id in a lateral subquery.
READ_LATERAL="select pi.id from unnest(\$1::text[], \$2::text[]) with ordinality as r(id, subject, ord)
  cross join lateral (select * from page_import p where p.id = r.id offset 0) pi where pi.deleted_at is null
  and exists (select 1 from member_organizations(r.subject) o where o.organization_id = pi.organization_id)"

echo
echo "### C2. A by-id read planned on a 1-row table, run at $GROW rows (no ANALYZE)"
echo
echo "| shape | plans | plan | planning ms | execution ms |"
echo "|---|---|---|---|---|"
for mode in "join:generic" "join:generic, enable_seqscan off" "join:custom" "lateral:generic" "lateral:generic, enable_seqscan off"; do
  shape=${mode%%:*}
  mode=${mode#*:}
  case $mode in
    generic) settings="set plan_cache_mode = force_generic_plan;" ;;
    custom) settings="set plan_cache_mode = force_custom_plan;" ;;
    *) settings="set plan_cache_mode = force_generic_plan; set enable_seqscan = off;" ;;
  esac
  [ "$shape" = join ] && read_sql=$READ || read_sql=$READ_LATERAL
  out=$("${PSQL[@]}" 2>/dev/null <<SQL
alter table page_import set (autovacuum_enabled = false);
truncate page_import, page_import_deletion, organization, project, organization_member, outbox_message cascade;
insert into organization (id, name) values (1, 'o');
insert into project (id, organization_id, name) values (1, 1, 'p');
insert into organization_member values (1, 'bench');
insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height, nonce, created_by, updated_by)
  values ('first', 1, 1, 'https://example.com/', 1280, 800, 'n', 'bench', 'bench');
analyze page_import; analyze organization_member;
$settings
prepare read_by_id(text[], text[]) as $read_sql;
execute read_by_id(array['first'], array['bench']);
insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height, nonce, created_by, updated_by)
  select 'row-' || g, 1, 1, 'https://example.com/', 1280, 800, 'n', 'bench', 'bench' from generate_series(1, $GROW) g;
explain (analyze) execute read_by_id(array['row-7'], array['bench']);
SQL
)
  plan=$(grep -oE '(Seq Scan|Index Scan using [a-z_]+|Index Only Scan using [a-z_]+|Bitmap Heap Scan) on page_import' <<<"$out" | head -1)
  ms=$(grep -oE 'Execution Time: [0-9.]+' <<<"$out" | awk '{print $3}')
  planning=$(grep -oE 'Planning Time: [0-9.]+' <<<"$out" | awk '{print $3}')
  printf '| %s | %s | %s | %s | %s |\n' "$shape" "$mode" "$plan" "$planning" "$ms"
done
"${PSQL[@]}" -c "truncate page_import, page_import_deletion, organization, project, organization_member, outbox_message, page_import_attempt cascade" -c "alter table page_import reset (autovacuum_enabled)"

# C3: the create statement's lookups, in the shape before (a join) and now (a
# primary-key lookup in a lateral subquery, src/db/page_import.rs), as a
# generic plan.
CREATE_JOIN="from req r
  join project p on p.id = r.project_id and p.organization_id = r.organization_id
  where exists (select 1 from member_organizations(r.actor) o where o.organization_id = p.organization_id)"
CREATE_LATERAL="from req r
  cross join lateral (select p.id, p.organization_id from project p where p.id = r.project_id offset 0) p
  where p.organization_id = r.organization_id
    and exists (select 1 from member_organizations(r.actor) o where o.organization_id = p.organization_id)"
create_sql() {
  echo "with req as (select * from unnest(\$1::text[], \$2::int8[], \$3::int8[], \$4::text[]) as r(id, organization_id, project_id, actor)),
  inserted as (insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height, nonce, created_by, updated_by)
    select r.id, p.organization_id, p.id, 'https://example.com/', 1280, 800, 'n', r.actor, r.actor $1 returning id)
  select count(*) from inserted"
}

echo
echo "### C3. The create statement's generic plan, made on a 1-project database, run at $GROW projects"
echo
echo "Two creates per statement; statistics of the one-project database as left"
echo "by TRUNCATE (none) or by ANALYZE; no ANALYZE after growing."
echo
echo "| shape | settings | stats when planned | project scanned by | execution ms |"
echo "|---|---|---|---|---|"
for shape in join lateral; do
  for seqscan in on off; do
    for stats in none analyzed; do
      [ $shape = join ] && from=$CREATE_JOIN || from=$CREATE_LATERAL
      [ $stats = analyzed ] && analyze="analyze project; analyze organization_member;" || analyze=
      out=$("${PSQL[@]}" 2>/dev/null <<SQL
alter table project set (autovacuum_enabled = false);
alter table organization_member set (autovacuum_enabled = false);
truncate page_import, page_import_deletion, organization, project, organization_member, outbox_message cascade;
insert into organization (id, name) values (1, 'o');
insert into project (id, organization_id, name) values (1, 1, 'p');
insert into organization_member values (1, 'bench');
$analyze
set plan_cache_mode = force_generic_plan;
set enable_seqscan = $seqscan;
prepare c(text[], int8[], int8[], text[]) as $(create_sql "$from");
begin; execute c(array['a'], array[1::int8], array[1::int8], array['bench']); rollback;
insert into organization (id, name) select g, 'o' from generate_series(2, $GROW) g;
insert into project (id, organization_id, name) select g, g, 'p' from generate_series(2, $GROW) g;
insert into organization_member select g, 'user' || g from generate_series(2, $GROW) g;
begin;
explain (analyze, costs off) execute c(array['b', 'c'], array[1::int8, 77::int8], array[1::int8, 77::int8], array['bench', 'user77']);
rollback;
SQL
)
      plan=$(grep -oE '(Seq Scan|Index Scan using [a-z_]+|Index Only Scan using [a-z_]+|Bitmap Heap Scan) on project' <<<"$out" | head -1)
      ms=$(grep -oE 'Execution Time: [0-9.]+' <<<"$out" | awk '{print $3}')
      printf '| %s | enable_seqscan %s | %s | %s | %s |\n' "$shape" "$seqscan" "$stats" "$plan" "$ms"
    done
  done
done
"${PSQL[@]}" -c "truncate page_import, page_import_deletion, organization, project, organization_member, outbox_message, page_import_attempt cascade" \
  -c "alter table project reset (autovacuum_enabled)" -c "alter table organization_member reset (autovacuum_enabled)"
