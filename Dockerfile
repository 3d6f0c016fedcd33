# Build with the committed .sqlx/ data: no database is needed at build time.
# Two images from one build: `--target service` (the default, last stage) and
# `--target capture-worker`.
FROM rust:1.95-bookworm AS build
WORKDIR /src
ENV SQLX_OFFLINE=true
COPY . .
RUN cargo build --release --locked -p page-import -p capture-worker \
 && strip target/release/page-import target/release/capture-worker

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
COPY --from=build /src/target/release/capture-worker /usr/local/bin/capture-worker
USER 10001:10001
ENV HOME=/nonexistent TMPDIR=/tmp CHROMIUM_PATH=/usr/lib/chromium/chromium
ENTRYPOINT ["capture-worker"]

FROM debian:bookworm-slim AS service
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/page-import /usr/local/bin/page-import
# Only the development JWKS (public keys) for the compose stack; the
# development signing key never enters an image.
COPY --from=build /src/dev/jwks.json /opt/page-import/dev/jwks.json
USER nobody
ENV LISTEN_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["page-import"]
CMD ["serve"]
