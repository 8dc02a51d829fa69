# Builds the phalanx binary into a small image for deploy/deployment.yaml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# phalanx version prints these; without them, what Go recorded of the checkout.
ARG VERSION=""
ARG COMMIT=""
ARG BUILD_DATE=""
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.buildVersion=${VERSION} -X main.buildCommit=${COMMIT} -X main.buildDate=${BUILD_DATE}" \
    -o /phalanx ./cmd/phalanx

FROM gcr.io/distroless/static:nonroot
COPY --from=build /phalanx /phalanx
USER 65532:65532
ENTRYPOINT ["/phalanx"]
