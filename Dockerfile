# syntax=docker/dockerfile:1
#
# udgam-ci in a container: the report server by default, and the Action's
# entrypoint too (docker run ... udgam-ci-image action).
#
#   docker build -t udgam-ci .
#   docker run -d -p 8080:8080 -v udgam-ci-data:/data udgam-ci
#   docker run --rm -v udgam-ci-data:/data udgam-ci server token create --db /data/runs.db --repo OWNER/NAME
#
# The image runs on other machines than the one that builds it, so nothing
# in it is compiled for the build machine's processor: `make variants`
# compiles udgam-ci (llama.cpp through cgo) once per x86-64 level with fixed
# flags (-march=x86-64-v2, -v3, -v4; one baseline on arm64) into
# /usr/local/libexec, and /usr/local/bin/udgam-ci is a small pure-Go
# launcher that execs the best one the running CPU supports
# (docs/portable-builds.md; UDGAM_CI_VARIANT=NAME forces one). Three llama.cpp
# compiles make the build take three times as long as one.
#
# linux/arm64 (issue 38): docker buildx build --platform linux/arm64 .
# The build stage runs on the build machine's own platform and
# cross-compiles with Debian's gcc-aarch64-linux-gnu (make variants
# GOARCH=arm64), instead of compiling llama.cpp under emulation.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETARCH
WORKDIR /src
RUN if [ "${TARGETARCH:-$(go env GOARCH)}" != "$(go env GOARCH)" ]; then \
      pkg=$(case "$TARGETARCH" in arm64) echo aarch64-linux-gnu;; amd64) echo x86-64-linux-gnu;; esac) \
      && apt-get update \
      && apt-get install -y --no-install-recommends gcc-$pkg g++-$pkg \
      && rm -rf /var/lib/apt/lists/*; \
    fi
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    make variants DIST=/out GOARCH=${TARGETARCH:-$(go env GOARCH)} \
 && if [ "${TARGETARCH:-$(go env GOARCH)}" = "$(go env GOARCH)" ]; then /out/bin/udgam-ci version; fi

FROM debian:bookworm-slim
# ca-certificates: the hub, GitHub and report server are reached over HTTPS.
# libstdc++6 and libgcc-s1 carry the C++ runtime llama.cpp links against.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libstdc++6 libgcc-s1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin udgam \
 && mkdir -p /data \
 && chown udgam:udgam /data
COPY --from=build /out/bin/udgam-ci /usr/local/bin/udgam-ci
COPY --from=build /out/libexec/ /usr/local/libexec/

USER udgam
WORKDIR /data
VOLUME ["/data"]
ENV UDGAM_CI_CACHE=/data/cache
EXPOSE 8080

ENTRYPOINT ["udgam-ci"]
CMD ["serve", "--db", "/data/runs.db", "--addr", "0.0.0.0:8080"]
