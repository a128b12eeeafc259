# Multi-stage build of the three Black Widow binaries into one small image.
#   docker build -t blackwidow .
#   docker run blackwidow hub --listen 0.0.0.0:8700
#   docker run blackwidow spawn --hub http://hub:8700 --listen 0.0.0.0:8701 --advertise http://spawn1:8701
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure-Go SQLite driver: no cgo, fully static binaries.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./hub ./spawn ./cmd/bwctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hub /out/spawn /out/bwctl /usr/local/bin/
USER nonroot:nonroot
WORKDIR /var/lib/blackwidow
EXPOSE 8700
ENTRYPOINT []
CMD ["hub", "--listen", "0.0.0.0:8700", "--db", "sqlite:///var/lib/blackwidow/blackwidow.db"]
