# Build with the committed .sqlx/ data: no database is needed at build time.
FROM rust:1.95-bookworm AS build
WORKDIR /src
ENV SQLX_OFFLINE=true
COPY . .
RUN cargo build --release --locked && strip target/release/page-import

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/page-import /usr/local/bin/page-import
COPY --from=build /src/dev /opt/page-import/dev
USER nobody
ENV LISTEN_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["page-import"]
CMD ["serve"]
