# Build with the committed .sqlx/ data: no database is needed at build time.
# The images of docker-compose.yml, each a `--target`: `service` (the default,
# last stage), `capture-worker`, and the stack's `postgres`, `moto` (the AWS
# emulator) and `sample-site`.
#
# BINARIES picks where the two binaries come from: `build` (the default)
# compiles them here; `prebuilt` copies them from .compose-test/bin/ in the
# context, where scripts/compose-test puts the ones CI has already built, so
# CI does not pay a second, release build. docker-compose.yml names `build`
# again because podman's builder ignores this default when it names a stage.
ARG BINARIES=build

FROM rust:1.95-bookworm AS build
WORKDIR /src
ENV SQLX_OFFLINE=true
COPY . .
RUN cargo build --release --locked -p page-import -p capture-worker \
 && strip target/release/page-import target/release/capture-worker

FROM scratch AS prebuilt
COPY .compose-test/bin/page-import .compose-test/bin/capture-worker /src/target/release/
COPY dev/jwks.json /src/dev/jwks.json

FROM ${BINARIES} AS binaries

# PostgreSQL 15 from Debian, as the tests run it, with the stack's database
# made at build time (the official postgres image cannot be built without
# Docker Hub). A development database: the password is the compose file's,
# and the data lives in the container, gone with `docker compose down`.
FROM debian:bookworm-slim AS postgres
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/*
USER postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
RUN echo postgres > /tmp/pw \
 && initdb -U postgres --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C >/dev/null \
 && rm /tmp/pw \
 && echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf" \
 && echo 'create database page_import' | postgres --single -D "$PGDATA" postgres >/dev/null
# SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client).
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres", "-c", "listen_addresses=*"]

# The AWS emulator: moto from PyPI (LocalStack's image cannot be built
# without Docker Hub; the tests use moto too), with the stack's queues and
# bucket (scripts/compose-moto.sh).
FROM debian:bookworm-slim AS moto
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/moto \
 && /opt/moto/bin/pip install --no-cache-dir --disable-pip-version-check 'moto[server]==5.2.6'
COPY scripts/compose-moto.sh /usr/local/bin/compose-moto
USER nobody
ENV PATH=/opt/moto/bin:$PATH
EXPOSE 4566
ENTRYPOINT ["compose-moto"]

# The sample site of dev/sample-site, for imports from inside the stack. On
# port 80: source URLs take no other port but 443. busybox binds it as root,
# then serves as nobody.
FROM debian:bookworm-slim AS sample-site
RUN apt-get update \
 && apt-get install -y --no-install-recommends busybox \
 && rm -rf /var/lib/apt/lists/*
COPY dev/sample-site /srv/sample-site
EXPOSE 80
# As PID 1 it ignores SIGTERM; it has nothing to finish.
STOPSIGNAL SIGKILL
CMD ["busybox", "httpd", "-f", "-p", "80", "-u", "nobody:nogroup", "-h", "/srv/sample-site"]

# The reference capture worker with Debian's Chromium and fonts for Japanese
# and emoji. It is PID 1 and reaps Chromium's children itself
# (PR_SET_CHILD_SUBREAPER, waitpid(-1)), so it needs no init.
#
# Chromium comes from Debian and nowhere else: bookworm-security follows
# Chromium's stable releases. An empty CHROMIUM_VERSION takes Debian's current
# build; a version from `apt-cache policy chromium` pins one. Rebuild this
# image weekly to get Chromium's security fixes:
#   docker compose build --pull --no-cache capture-worker
# The running browser is worker_browser_info{version} on WORKER_HEALTH_ADDR's
# /metrics.
#
# Chromium keeps its sandbox, which needs unprivileged user namespaces: run
# the container with the seccomp profile deploy/seccomp/chromium.json (as
# docker-compose.yml does), never with SYS_ADMIN, --privileged or
# --no-sandbox. Under Docker's default profile the worker exits at start-up
# with one line.
FROM debian:bookworm-slim AS capture-worker
ARG CHROMIUM_VERSION=
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
      "chromium${CHROMIUM_VERSION:+=$CHROMIUM_VERSION}" \
      fonts-liberation fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji \
 && rm -rf /var/lib/apt/lists/* \
 && /usr/lib/chromium/chromium --version
# Nothing needs root: the worker runs as an account of its own and starts
# Chromium as itself, with HOME and TMPDIR in a fresh directory under /tmp
# (a worker run as root would start it as CHROMIUM_USER). The account's HOME
# does not exist, so no process of that user can leave a file there (an
# ~/.aws/config, say) for the worker to read.
RUN groupadd --gid 10001 capture-worker \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --no-log-init capture-worker
COPY --from=binaries /src/target/release/capture-worker /usr/local/bin/capture-worker
USER 10001:10001
ENV HOME=/nonexistent TMPDIR=/tmp CHROMIUM_PATH=/usr/lib/chromium/chromium
ENTRYPOINT ["capture-worker"]

FROM debian:bookworm-slim AS service
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=binaries /src/target/release/page-import /usr/local/bin/page-import
# Only the development JWKS (public keys) for the compose stack; the
# development signing key never enters an image.
COPY --from=binaries /src/dev/jwks.json /opt/page-import/dev/jwks.json
USER nobody
ENV LISTEN_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["page-import"]
CMD ["serve"]
