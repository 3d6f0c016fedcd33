# Shared helpers for scripts/dev and scripts/test: a throwaway PostgreSQL
# cluster and a moto server, both on free loopback ports, stopped by PID.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
VENV="$ROOT/.venv"
MOTO_SPEC='moto[server]>=5.1,<6'

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# PostgreSQL 15 server binaries (Debian) and the client tools.
ensure_postgres() {
  if [ ! -x "$PG_BIN/initdb" ]; then
    log "installing PostgreSQL 15 from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 postgresql-client-15 >/dev/null
  fi
  command -v psql >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client-15 >/dev/null; }
}

# Headless Chromium from Debian for the capture worker, with fonts for the
# major scripts (SPEC §14): CJK (fonts-noto-cjk), Arabic, Hebrew, Thai and
# Devanagari among Noto's others (fonts-noto-core), emoji, and the metric
# twins of Arial, Times and Courier (fonts-liberation). The worker runs
# /usr/lib/chromium/chromium directly: the /usr/bin/chromium wrapper breaks
# on these machines' /dev/shm mounts.
CHROMIUM=${CHROMIUM_PATH:-/usr/lib/chromium/chromium}
# The Dockerfile's capture-worker stage installs the same list.
CHROMIUM_FONTS="fonts-liberation fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji"
ensure_chromium() {
  if [ ! -x "$CHROMIUM" ] || ! dpkg -s $CHROMIUM_FONTS >/dev/null 2>&1; then
    log "installing Chromium and fonts from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      chromium $CHROMIUM_FONTS >/dev/null
  fi
  log "$("$CHROMIUM" --version 2>/dev/null || echo 'chromium: not runnable')"
}

# The packages a test fixture directory pins in its package-lock.json, from
# the npm registry (npm from Debian when missing); install scripts are not
# run. Again only when the lock changed since the last install.
ensure_npm_fixtures() {
  local dir="$ROOT/tests/fixtures/$1" what="$2"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || ! cmp -s "$dir/package-lock.json" "$dir/.installed-lock"; then
    command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }
    log "installing $what from the npm registry"
    (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts)
    cp "$dir/package-lock.json" "$dir/.installed-lock"
  fi
}

# The consent-management libraries the consent tests serve
# (tests/fixtures/cmp). The worker's own rule set is vendored, not fetched
# (scripts/update-autoconsent).
ensure_cmp_fixtures() {
  ensure_npm_fixtures cmp "the consent tests' CMP libraries"
}

# The Start Bootstrap landing templates the landing tests serve
# (tests/fixtures/landing, issue 58).
ensure_landing_fixtures() {
  ensure_npm_fixtures landing "the landing tests' Start Bootstrap templates"
}

# The CSS and component libraries the interaction-state corpus serves
# (tests/fixtures/states: Tailwind's run-time compiler, Shoelace, Lit,
# Bootstrap, daisyUI).
ensure_states_fixtures() {
  ensure_npm_fixtures states "the states corpus's CSS and component libraries"
}

# Prometheus and promtool from Debian: the alert rules' unit tests
# (promtool test rules) and tests/api/alerts.rs, which runs a real server.
ensure_prometheus() {
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    log "installing Prometheus from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
}

# moto in a project-local virtualenv.
ensure_moto() {
  if [ ! -x "$VENV/bin/moto_server" ]; then
    log "installing moto into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$MOTO_SPEC"
  fi
}

# start_postgres DIR → sets PG_PORT, DATABASE_URL; the cluster lives in DIR/pg.
start_postgres() {
  local dir=$1
  install -d -o postgres -m 700 "$dir/pg"
  PG_PORT=$(free_port)
  runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/pg/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $dir/pg -c max_connections=300 -c fsync=${PG_FSYNC:-on}" start >/dev/null
  DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/page_import"
  psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 'create database page_import' >/dev/null
  export PG_PORT DATABASE_URL
  log "PostgreSQL on 127.0.0.1:$PG_PORT (data in $dir/pg)"
}

stop_postgres() {
  local dir=$1
  [ -f "$dir/pg/data/postmaster.pid" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 || true
}

# start_moto DIR → sets MOTO_PORT, MOTO_PID, AWS_* variables.
start_moto() {
  local dir=$1
  MOTO_PORT=$(free_port)
  "$VENV/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT" >"$dir/moto.log" 2>&1 &
  MOTO_PID=$!
  echo "$MOTO_PID" >"$dir/moto.pid"
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$MOTO_PORT/moto-api/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  export MOTO_PORT MOTO_PID
  export AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO_PORT"
  export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  export S3_FORCE_PATH_STYLE=true
  log "moto on 127.0.0.1:$MOTO_PORT (pid $MOTO_PID)"
}

stop_moto() {
  local dir=$1
  if [ -f "$dir/moto.pid" ]; then
    local pid; pid=$(cat "$dir/moto.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/moto.pid"
  fi
}

# Queues and bucket for the local service.
create_aws_resources() {
  "$VENV/bin/python" - <<PY
import boto3
kw = dict(endpoint_url="$AWS_ENDPOINT_URL", region_name="us-east-1",
          aws_access_key_id="test", aws_secret_access_key="test")
sqs = boto3.client("sqs", **kw)
for name in ("page-import", "code2des"):
    sqs.create_queue(QueueName=name)
boto3.client("s3", **kw).create_bucket(Bucket="page-import-artifacts")
PY
  export PAGE_IMPORT_QUEUE_URL="$AWS_ENDPOINT_URL/123456789012/page-import"
  export CODE2DES_QUEUE_URL="$AWS_ENDPOINT_URL/123456789012/code2des"
  export ARTIFACT_BUCKET=page-import-artifacts
}
