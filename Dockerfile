# Builds the phalanx binary into a small image for deploy/deployment.yaml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /phalanx ./cmd/phalanx

FROM gcr.io/distroless/static:nonroot
COPY --from=build /phalanx /phalanx
USER 65532:65532
ENTRYPOINT ["/phalanx"]
