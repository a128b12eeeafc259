# syntax=docker/dockerfile:1
#
# Multi-stage build of the three Black Widow binaries into one small image
# (hub, spawn and bwctl in /usr/local/bin, running as an unprivileged user).
#
#   docker build -t blackwidow .
#   docker run -p 8700:8700 -e BW_ADMIN_TOKEN -e BW_NODE_TOKEN -e BW_ALLOWED_HOSTS=hub blackwidow
#   docker run -e BW_NODE_TOKEN blackwidow spawn --hub http://hub:8700 \
#       --listen 0.0.0.0:8701 --advertise http://spawn1:8701
#
# A server answers only requests that name one of its own hosts (loopback, its
# bound and advertised addresses, --allowed-hosts): list the names it is
# reached by behind port mappings, proxies and container networks.
#
# configs/compose.yaml runs the whole system (PostgreSQL, Cassandra, NATS, a
# hub and two spawns) from this image.

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
# Pure Go throughout (the SQLite driver included): static binaries, no libc.
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ ./hub ./spawn ./cmd/bwctl

# Alpine rather than distroless: its busybox wget lets compose and
# orchestrators probe GET /healthz from inside the container.
FROM alpine:${ALPINE_VERSION}
RUN apk add --no-cache ca-certificates tzdata \
    && addgroup -S -g 10001 blackwidow \
    && adduser -S -D -H -u 10001 -G blackwidow -h /var/lib/blackwidow blackwidow \
    && install -d -o blackwidow -g blackwidow -m 0750 /var/lib/blackwidow
COPY --from=build /out/hub /out/spawn /out/bwctl /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/blackwidow
VOLUME ["/var/lib/blackwidow"]
# 8700: the hub's admin and node API; 8701: a spawn's node API by convention.
EXPOSE 8700 8701
ENTRYPOINT []
CMD ["hub", "--listen", "0.0.0.0:8700", "--db", "sqlite:///var/lib/blackwidow/blackwidow.db"]
