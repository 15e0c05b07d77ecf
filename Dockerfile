# One image for the hub, the syncer and the simulated clusters; its entrypoint is `spacehub`:
#   docker run ghcr.io/spacehub/spacehub:0.1.0 hub serve --listen 0.0.0.0:6443 --data-dir /var/lib/spacehub
#   docker run ghcr.io/spacehub/spacehub:0.1.0 syncer run --bootstrap /etc/spacehub-syncer/bootstrap.yaml
#   docker run ghcr.io/spacehub/spacehub:0.1.0 sim serve --clusters 2 --listen 0.0.0.0:7443
# Build from the repository root: docker build -t ghcr.io/spacehub/spacehub:0.1.0 .
# The tag is the package version: `spacehub cluster register -o manifest` defaults its syncer image to it.

# --- build: install spacehub and its runtime dependencies (PostgreSQL driver included) into a venv ---------
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
# Only what the wheel is built from (pyproject's package list and README as the long description).
COPY pyproject.toml README.md ./
COPY apimachinery/ apimachinery/
COPY cel/ cel/
COPY kubeclient/ kubeclient/
COPY apiserver/ apiserver/
COPY spacehub/ spacehub/
COPY hub/ hub/
COPY spaces/ spaces/
COPY inventory/ inventory/
COPY placement/ placement/
COPY status/ status/
COPY sync/ sync/
COPY debug/ debug/
COPY ui/ ui/
COPY syncer/ syncer/
COPY sim/ sim/
# Every dependency ships wheels for CPython 3.11 on amd64 and arm64, so no compiler is needed here either.
# kubernetes-validate carries the schemas of some twenty Kubernetes releases; the hub reads only the newest
# (apiserver/definitions.py), so the others (about 64 MB) are removed, and loading the kept one is checked.
# pip and setuptools are not needed to run spacehub: they leave the venv with the build.
RUN python -m venv /opt/spacehub \
    && /opt/spacehub/bin/pip install --no-cache-dir --disable-pip-version-check ".[postgres]" \
    && /opt/spacehub/bin/python -c "import os, shutil; from apiserver.definitions import schema_dir; \
keep = schema_dir(); base = os.path.dirname(keep); \
[shutil.rmtree(os.path.join(base, d)) for d in os.listdir(base) if os.path.join(base, d) != keep]; \
from apiserver.definitions import load_definitions; assert load_definitions()" \
    && /opt/spacehub/bin/pip uninstall --yes --disable-pip-version-check pip setuptools \
    && /opt/spacehub/bin/spacehub --version

# --- run: the slim Python base and the venv, nothing else -------------------------------------------------
FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="spacehub" \
      org.opencontainers.image.description="Multi-cluster placement hub, its syncer and simulated clusters"
ENV PATH=/opt/spacehub/bin:$PATH \
    HOME=/home/spacehub \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/spacehub /opt/spacehub
# The home and the default data dir belong to the numeric user the container runs as (no passwd entry is
# needed; Kubernetes' runAsNonRoot can verify a numeric user).
RUN install -d -o 65532 -g 65532 -m 0750 /home/spacehub /var/lib/spacehub
WORKDIR /home/spacehub
USER 65532:65532
EXPOSE 6443
ENTRYPOINT ["spacehub"]
CMD ["--help"]
