# The operator's image: docker build -t addon-operator:dev .
# Hooks run inside it, so it carries bash and jq (the shell hooks of the
# spec and of examples/ need them); git itself is not needed (go-git).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/addon-operator ./cmd/addon-operator

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash jq ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/addon-operator /usr/local/bin/addon-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/addon-operator"]
CMD ["start"]
