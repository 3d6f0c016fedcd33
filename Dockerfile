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
# and emoji. It reaps Chromium's children itself (PR_SET_CHILD_SUBREAPER).
FROM debian:bookworm-slim AS capture-worker
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates chromium \
      fonts-liberation fonts-noto-cjk fonts-noto-color-emoji && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/capture-worker /usr/local/bin/capture-worker
USER nobody
ENV HOME=/tmp CHROMIUM_PATH=/usr/lib/chromium/chromium
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
