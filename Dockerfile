# The operator's image: docker build -t addon-operator:dev .
# Hooks run inside it, so it carries bash and jq (the shell hooks of the
# spec and of examples/ need them); git itself is not needed (go-git).
# Debian trixie for jq 1.7: bookworm's jq 1.6 spends ~20 ms linking its
# builtins at every start, which a reload of many modules pays once per
# hook run (docs/performance.md).
FROM golang:1.26-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/addon-operator ./cmd/addon-operator

FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash jq ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/addon-operator /usr/local/bin/addon-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/addon-operator"]
CMD ["start"]
