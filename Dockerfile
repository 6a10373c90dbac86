# syntax=docker/dockerfile:1
#
# udgam-ci in a container: the report server by default, and the Action's
# entrypoint too (docker run ... udgam-ci-image action).
#
#   docker build -t udgam-ci .
#   docker run -d -p 8080:8080 -v udgam-ci-data:/data udgam-ci
#   docker run --rm -v udgam-ci-data:/data udgam-ci server token create --db /data/runs.db --repo OWNER/NAME
#
# The binary embeds llama.cpp through cgo. It is built for a portable x86-64
# baseline (AVX2/FMA/F16C, `make build PORTABLE=1`) rather than for the build
# machine, because the image runs elsewhere.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    make build PORTABLE=1 \
 && install -D -m 0755 bin/udgam-ci /out/udgam-ci \
 && /out/udgam-ci version

FROM debian:bookworm-slim
# ca-certificates: the hub, GitHub and report server are reached over HTTPS.
# libstdc++6 and libgcc-s1 carry the C++ runtime llama.cpp links against.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libstdc++6 libgcc-s1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin udgam \
 && mkdir -p /data \
 && chown udgam:udgam /data
COPY --from=build /out/udgam-ci /usr/local/bin/udgam-ci

USER udgam
WORKDIR /data
VOLUME ["/data"]
ENV UDGAM_CI_CACHE=/data/cache
EXPOSE 8080

ENTRYPOINT ["udgam-ci"]
CMD ["serve", "--db", "/data/runs.db", "--addr", "0.0.0.0:8080"]
