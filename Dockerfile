# Build: Swift on Debian bookworm, with the C libraries Cloak links.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      libevent-dev libssl-dev libsqlite3-dev pkg-config \
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
    && cp "$(swift build -c release --show-bin-path)/cloak" /usr/local/bin/cloak

# Run: slim Debian with only the runtime libraries.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      libevent-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7 libssl3 libsqlite3-0 \
      ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /srv/cloak cloak \
    && mkdir -p /srv/cloak/data && chown cloak /srv/cloak/data
WORKDIR /srv/cloak
COPY --from=build /usr/local/bin/cloak /usr/local/bin/cloak
COPY --from=build /src/config ./config
USER cloak
ENV CLOAK_SERVER_LISTEN=0.0.0.0:8080
EXPOSE 8080
VOLUME ["/srv/cloak/data"]
HEALTHCHECK --interval=10s --timeout=2s CMD ["/bin/sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080"]
ENTRYPOINT ["cloak"]
CMD ["serve", "--config", "config/cloak.yaml"]
