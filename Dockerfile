# The hotpair image: one static binary (every daemon and tool), run as a
# non-root user. Build from the repository root:
#   docker build --build-arg VERSION=$(git describe --always) -t hotpair:local .
# deploy/ checks this file without a Docker engine (deploy/dockerfile_test.go):
# its go build line is run as written and must give the binary `go build` gives.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/hotpair/hotpair/internal/buildinfo.Version=${VERSION}" -o /out/hotpair ./cmd/hotpair
# The pipeline's state directory, owned by the runtime user, so that a volume
# mounted there starts writable.
RUN mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hotpair /usr/local/bin/hotpair
COPY --from=build --chown=65532:65532 /out/state /var/lib/hotpair
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hotpair"]
CMD ["version"]
