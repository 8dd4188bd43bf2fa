# syntax=docker/dockerfile:1
# The dynrec image: `docker build -t dynrec:0.1.0 .` (BuildKit, the default builder).
#
# Stage 1 builds the binary; stage 2 is distroless (glibc, libgcc and CA certificates; no
# shell, no package manager) and runs as its non-root user. TLS is rustls: no OpenSSL.

# The toolchain the workspace is built and tested with (its rust-version is 1.89).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the registry and the compiled dependencies between builds.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin dynrec \
    && cp target/release/dynrec /dynrec

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /dynrec /usr/local/bin/dynrec
# distroless' nonroot user, numeric so that the kubelet can check `runAsNonRoot`.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/dynrec"]
CMD ["run"]
