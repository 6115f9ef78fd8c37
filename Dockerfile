# Build: Swift on Debian bookworm, with the C libraries Cloak links.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      libevent-dev libssl-dev libsqlite3-dev libpq-dev libp11-kit-dev libgpgme-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Resolve dependencies in their own layer so source edits do not refetch them.
COPY Package.swift ./
RUN swift package resolve
# Every target the manifest names must exist for it to load, tests and micro-benchmarks included.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks/Micro ./Benchmarks/Micro
COPY config ./config
RUN swift build -c release --product cloak --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/cloak" /usr/local/bin/cloak \
    && strip /usr/local/bin/cloak

# Run: slim Debian with only the runtime libraries, as uid/gid 10001 (runAsNonRoot can verify it).
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      libevent-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7 libssl3 libsqlite3-0 libpq5 libgpgme11 gnupg \
      ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 cloak \
    && useradd --system --uid 10001 --gid 10001 --home /srv/cloak cloak \
    && install -d -m 0700 -o 10001 -g 10001 /srv/cloak/data
WORKDIR /srv/cloak
COPY --from=build /usr/local/bin/cloak /usr/local/bin/cloak
COPY --from=build /src/config ./config
USER 10001:10001
ENV CLOAK_SERVER_LISTEN=0.0.0.0:8080
EXPOSE 8080
# Keys and the SQLite vault live here: mount a named volume (docker run -v cloak-data:/srv/cloak/data),
# never an anonymous one that `--rm` throws away with the keys.
VOLUME ["/srv/cloak/data"]
# GET /readyz of the configured listener (CLOAK_SERVER_LISTEN included); no shell needed.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s CMD ["cloak", "healthcheck"]
ENTRYPOINT ["cloak"]
CMD ["serve", "--config", "config/cloak.yaml"]
