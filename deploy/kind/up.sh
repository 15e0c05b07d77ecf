#!/usr/bin/env bash
# spacehub on kind, for machines with Docker: `deploy/kind/up.sh` (or `deploy/kind/up.sh down` to remove it).
#
# Creates three kind clusters — spacehub-hub runs the hub (deploy/hub-sqlite), spacehub-wec1 and
# spacehub-wec2 are workload clusters — builds the image and loads it into all three, registers both workload
# clusters with `spacehub cluster register NAME -o manifest --syncer-image IMAGE | kubectl apply -f -`
# (labels env=dev and cluster=NAME), and runs the README's example: examples/hello in space team-a, placed on
# both clusters by its EdgePlacement. Running it again reuses what exists.
#
# Needs docker, kind and kubectl, and the spacehub command (this checkout's .venv, made by `make run` or
# `make test`, is used when present). Settings, from the environment:
#   SPACEHUB_IMAGE      the image built and loaded (default ghcr.io/spacehub/spacehub:dev), NAME:TAG
#   SPACEHUB_KIND_PORT  the port on 127.0.0.1 where this machine reaches the hub (default 16443)
#   SPACEHUB_KIND_DIR   where the hub overlay and the admin kubeconfig go (default .spacehub/kind)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${SPACEHUB_IMAGE:-ghcr.io/spacehub/spacehub:dev}
HUB_PORT=${SPACEHUB_KIND_PORT:-16443}
STATE=${SPACEHUB_KIND_DIR:-$ROOT/.spacehub/kind}
HUB=spacehub-hub
WECS=(wec1 wec2)
NODE_PORT=30443  # the hub's Service on the hub cluster's node, which syncers in the other clusters dial

die() {
    echo "up.sh: $*" >&2
    exit 1
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"
}

# wait_until SECONDS WHAT COMMAND...: run COMMAND every 2 s until it succeeds; fail after SECONDS.
wait_until() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            die "timed out after $1 s waiting for $what"
        fi
        sleep 2
    done
}

cluster_exists() {
    kind get clusters 2>/dev/null | grep -x -- "$1" >/dev/null
}

down() {
    local name
    for name in "$HUB" "${WECS[@]/#/spacehub-}"; do
        if cluster_exists "$name"; then
            kind delete cluster --name "$name"
        fi
    done
    rm -rf "$STATE"
}

need docker "install Docker: https://docs.docker.com/engine/install/"
need kind "install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation"
case ${1:-up} in
    up) ;;
    down)
        down
        exit 0
        ;;
    *) die "usage: $0 [up|down]" ;;
esac
if [ -x "$ROOT/.venv/bin/spacehub" ]; then
    PATH="$ROOT/.venv/bin:$PATH"  # also brings the kubectl space plugin (and kubectl) installed there
fi
need kubectl "install kubectl: https://kubernetes.io/docs/tasks/tools/"
need spacehub "run 'make test' (or 'make run') in $ROOT once, or 'pip install $ROOT'"
need kubectl-space "the kubectl space plugin comes with spacehub: 'pip install $ROOT'"
docker info >/dev/null 2>&1 || die "docker cannot reach its daemon (is it running, and may this user use it?)"
case $IMAGE in
    *:*) ;;
    *) die "SPACEHUB_IMAGE must be NAME:TAG, not $IMAGE" ;;
esac
mkdir -p "$STATE"

echo "--- kind clusters"
if ! cluster_exists "$HUB"; then
    # The hub's NodePort is also published on this machine's loopback, where kubectl and spacehub reach it.
    cat >"$STATE/hub-cluster.yaml" <<EOF
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  extraPortMappings:
  - containerPort: $NODE_PORT
    hostPort: $HUB_PORT
    listenAddress: 127.0.0.1
    protocol: TCP
EOF
    kind create cluster --name "$HUB" --config "$STATE/hub-cluster.yaml" --wait 180s
fi
for wec in "${WECS[@]}"; do
    if ! cluster_exists "spacehub-$wec"; then
        kind create cluster --name "spacehub-$wec" --wait 180s
    fi
done

echo "--- image $IMAGE"
docker build --tag "$IMAGE" "$ROOT"
for name in "$HUB" "${WECS[@]/#/spacehub-}"; do
    kind load docker-image "$IMAGE" --name "$name"
done

echo "--- the hub (deploy/hub-sqlite) in kind cluster $HUB"
# The hub node's address on Docker's kind network: pods of the workload clusters reach the NodePort there.
HUB_IP=$(docker inspect --format '{{with index .NetworkSettings.Networks "kind"}}{{.IPAddress}}{{end}}' \
    "$HUB-control-plane")
[ -n "$HUB_IP" ] || die "could not find the address of $HUB-control-plane on Docker's kind network"
overlay="$STATE/hub"
rm -rf "$overlay"
mkdir -p "$overlay"
cp -R "$ROOT/deploy/hub-sqlite" "$overlay/base"
cat >"$overlay/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- base
images:
- name: ghcr.io/spacehub/spacehub
  newName: ${IMAGE%:*}
  newTag: ${IMAGE##*:}
configMapGenerator:
- name: spacehub-hub
  namespace: spacehub
  behavior: merge
  literals:
  - advertise-url=https://$HUB_IP:$NODE_PORT
patches:
- patch: |-
    apiVersion: v1
    kind: Service
    metadata:
      name: spacehub-hub
      namespace: spacehub
    spec:
      type: NodePort
      ports:
      - name: https
        port: 6443
        targetPort: https
        nodePort: $NODE_PORT
EOF
kubectl --context "kind-$HUB" apply -k "$overlay"
kubectl --context "kind-$HUB" -n spacehub rollout status deployment/spacehub-hub --timeout=300s

# The admin kubeconfig the hub wrote names the advertised address; this machine dials the published port.
HUB_KUBECONFIG="$STATE/admin.kubeconfig"
(
    umask 077
    kubectl --context "kind-$HUB" -n spacehub exec deployment/spacehub-hub -- \
        cat /var/lib/spacehub/admin.kubeconfig >"$HUB_KUBECONFIG.new"
)
kubectl --kubeconfig "$HUB_KUBECONFIG.new" config set-cluster spacehub \
    --server "https://127.0.0.1:$HUB_PORT/clusters/root" >/dev/null
mv "$HUB_KUBECONFIG.new" "$HUB_KUBECONFIG"
HUB_URL="https://127.0.0.1:$HUB_PORT"

# at_hub COMMAND...: run COMMAND (kubectl, spacehub) against the hub; kind's contexts stay in the user's kubeconfig.
at_hub() {
    KUBECONFIG="$HUB_KUBECONFIG" "$@"
}
wait_until 60 "the hub on $HUB_URL" at_hub kubectl --server "$HUB_URL" get --raw /readyz

echo "--- workload clusters and their syncers"
for wec in "${WECS[@]}"; do
    context="kind-spacehub-$wec"
    if at_hub kubectl --server "$HUB_URL/clusters/inventory" get synctarget "$wec" >/dev/null 2>&1; then
        # Registered by an earlier run: a new credential, and the syncer restarted to read it.
        at_hub spacehub cluster rotate-credentials "$wec" -o manifest --syncer-image "$IMAGE" \
            | kubectl --context "$context" apply -f -
        kubectl --context "$context" -n spacehub-syncer rollout restart deployment/spacehub-syncer
    else
        at_hub spacehub cluster register "$wec" --label env=dev --label "cluster=$wec" -o manifest \
            --syncer-image "$IMAGE" | kubectl --context "$context" apply -f -
    fi
    kubectl --context "$context" -n spacehub-syncer rollout status deployment/spacehub-syncer --timeout=300s
done

echo "--- the README's example: examples/hello in space team-a, placed on both clusters"
at_hub kubectl --server "$HUB_URL/clusters/root" get space team-a >/dev/null 2>&1 \
    || at_hub spacehub space create team-a
at_hub kubectl space use team-a
at_hub kubectl apply -f "$ROOT/examples/hello/app.yaml"
at_hub kubectl apply -f "$ROOT/examples/hello/placement.yaml"
for wec in "${WECS[@]}"; do
    context="kind-spacehub-$wec"
    wait_until 180 "deployment hello in spacehub-$wec" kubectl --context "$context" -n hello get deployment hello
    kubectl --context "$context" -n hello rollout status deployment/hello --timeout=300s
    kubectl --context "$context" -n hello get deployments,pods
done

cat <<EOF

spacehub runs on kind. The hub, in space team-a:
  export KUBECONFIG=$HUB_KUBECONFIG
  kubectl get deployments -n hello; kubectl get edgeplacements
The workload clusters: kubectl --context kind-spacehub-wec1 (or -wec2) get deployments,pods -n hello
Remove it all: $0 down
EOF
