#!/usr/bin/env bash
# Preflight at scale (issue #4): generate a 500-node / 20,000-pod snapshot in the
# `kubectl get … -o yaml|json` List shape and time `bundlegate preflight` on it.
# Usage: bench/preflight-scale.sh [nodes] [pods]   (builds target/release first)
# Timing and peak RSS are printed, not asserted: tests stay free of wall-clock
# thresholds. The YAML row is the one to watch for memory: it reads one List
# item at a time (target: peak RSS <= 150 MiB at 500 nodes / 20,000 pods).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
NODES=${1:-500}
PODS=${2:-20000}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/bundlegate
python3 - "$NODES" "$PODS" "$OUT" <<'PY'
import json, sys
nodes, pods, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
items = []
for i in range(nodes):
    gpu = i % 10 == 0  # every tenth node has 4 GPUs
    labels = {"kubernetes.io/hostname": f"node-{i:04d}", "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": f"zone-{i % 3}"}
    alloc = {"cpu": "31850m", "memory": "127796132Ki", "ephemeral-storage": "193262184947", "pods": "110"}
    spec = {"providerID": f"aws:///zone/i-{i:017x}"}
    if gpu:
        labels["nvidia.com/gpu.present"] = "true"
        alloc["nvidia.com/gpu"] = "4"
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    items.append({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": f"node-{i:04d}", "labels": labels, "uid": f"u-{i}", "resourceVersion": str(i)},
                  "spec": spec,
                  "status": {"allocatable": alloc, "capacity": alloc,
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                             "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": "containerd://1.7.24"}}})
for j in range(pods):
    n = j % nodes
    gpu_node = n % 10 == 0
    req = {"cpu": "250m", "memory": "512Mi"}
    lim = {"memory": "512Mi"}
    if gpu_node and j % 40 < 8:
        req["nvidia.com/gpu"] = lim["nvidia.com/gpu"] = "1"
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"app-{j:05d}", "namespace": f"team-{j % 25}", "uid": f"p-{j}", "resourceVersion": str(j),
                               "labels": {"app.kubernetes.io/name": f"app-{j % 700}", "pod-template-hash": "6c8b7d9f5"},
                               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{j % 700}-6c8b7d9f5", "controller": True}]},
                  "spec": {"nodeName": f"node-{n:04d}", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                           "containers": [{"name": "app", "image": "registry.example.com/app@sha256:" + "ab" * 32,
                                           "resources": {"requests": req, "limits": lim},
                                           "ports": [{"containerPort": 8080, "protocol": "TCP"}]}],
                           "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
                  "status": {"phase": "Running", "podIP": f"10.{j // 65536}.{(j // 256) % 256}.{j % 256}",
                             "conditions": [{"type": "Ready", "status": "True"}],
                             "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "started": True}]}})
doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
json.dump(doc, open(f"{out}/snapshot.json", "w"))
try:
    import yaml
    # libyaml's emitter when present: the pure-Python one takes minutes on 20k pods.
    yaml.dump(doc, open(f"{out}/snapshot.yaml", "w"), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
except ImportError:
    pass
PY

BUNDLE=examples/llm-scratch/v2/release.yaml
# row NAME BASELINE CMD…: wall seconds and peak RSS of one run; appended to
# $BENCH_RESULTS (bench/lib.sh) when set. Exit 1 (a gate failed) is a valid answer.
row() {
  local name=$1 base=$2; shift 2
  set +e
  /usr/bin/time -f "%e %M" -o "$OUT/t" "$@" >/dev/null 2>"$OUT/err"
  local code=$?
  set -e
  if [ "$code" -gt 1 ]; then echo "FAILED ($code): $name"; cat "$OUT/err"; return 1; fi
  local secs rss
  read -r secs rss < <(tail -1 "$OUT/t")
  printf '%s (%s nodes, %s pods): exit %s in %s s, peak RSS %s KiB\n' "$name" "$NODES" "$PODS" "$code" "$secs" "$rss"
  local at=" ($NODES nodes, $PODS pods)"
  bench_row "$name$at" "$secs" "single run" "$rss" "$([ "$base" = - ] && echo - || echo "$base$at")"
}
NAIVE="python json.load + per-node sums"
row "$NAIVE" - python3 bench/naive-capacity.py "$OUT/snapshot.json"
row "preflight, JSON snapshot" "$NAIVE" "$BIN" preflight "$BUNDLE" --snapshot "$OUT/snapshot.json"
if [ -f "$OUT/snapshot.yaml" ]; then
  row "preflight, YAML snapshot" "$NAIVE" "$BIN" preflight "$BUNDLE" --snapshot "$OUT/snapshot.yaml"
fi
