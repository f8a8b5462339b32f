# Builds the `liveline` executable and a small runtime image with it and the migrations.
FROM swift:6.3-bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product liveline --static-swift-stdlib \
    && bin="$(swift build -c release --show-bin-path)" \
    && cp "$bin/liveline" /usr/local/bin/liveline \
    && cp -R "$bin/liveline_LivelineHTTP.resources" /usr/local/bin/

FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends libpq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /app liveline
COPY --from=build /usr/local/bin/liveline /usr/local/bin/liveline
# openapi.yaml, served at /openapi.yaml, is a resource bundle beside the executable.
COPY --from=build /usr/local/bin/liveline_LivelineHTTP.resources /usr/local/bin/liveline_LivelineHTTP.resources
COPY migrations /app/migrations
WORKDIR /app
USER liveline
ENV LIVELINE_MIGRATIONS=/app/migrations LIVELINE_HOST=0.0.0.0 LIVELINE_PORT=8080
EXPOSE 8080
CMD ["liveline", "serve"]
