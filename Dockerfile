# syntax=docker/dockerfile:1
# `capsid serve` in a container: a multi-stage build to a slim, non-root runtime image with the
# data folder (SQLite file, signing key, local blobs, dumps) on a volume and a health check.
#
#   docker build -t capsid .
#   docker run -d --name capsid -p 8787:8787 -v capsid-data:/data capsid
#   docker exec capsid capsid agents mint --name me --namespaces '*' --grants read,write
#
# Postgres instead of the embedded SQLite: `-e CAPSID_DATABASE_URL=postgres://...`.

FROM rust:1.94-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p capsid-cli \
 && cp target/release/capsid /usr/local/bin/capsid

FROM debian:bookworm-slim
# git: the driver and the restore tools call it; curl: the health check; ca-certificates:
# TLS toward GitHub, the model API and S3.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin capsid \
 && mkdir -p /data && chown capsid:capsid /data
COPY --from=build /usr/local/bin/capsid /usr/local/bin/capsid
USER capsid:capsid
ENV CAPSID_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8787/health || exit 1
ENTRYPOINT ["capsid"]
CMD ["serve", "--listen", "0.0.0.0:8787"]
