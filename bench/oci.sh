#!/usr/bin/env bash
# Models in an OCI registry (CNCF Distribution, Debian's `docker-registry`, on
# loopback), each figure against the best way a user would check the same bytes:
#   - default `verify` (manifest first: raw layers judged from the manifest, one
#     HEAD each) against one GET of the manifest: it must read no blob byte;
#   - `verify --deep` (every raw blob re-hashed) against the raw blobs fetched in
#     parallel with curl and piped to sha256sum (one process per blob);
#   - a tar+gzip layer walked and each file hashed, against
#     `curl blob | gunzip | sha256sum` of the same layer.
# Appends rows to $BENCH_RESULTS (bench/lib.sh's columns; best of RUNS); alone
# it prints them.
#   bash bench/oci.sh BIN [BIG_MB] [RUNS]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
BG="$1"; BIG_MB="${2:-2048}"; RUNS="${3:-3}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REGISTRY=${DOCKER_REGISTRY:-$(command -v docker-registry || echo /usr/bin/docker-registry)}
[ -x "$REGISTRY" ] || { echo "docker-registry not installed (scripts/install-test-deps installs it)" >&2; exit 3; }
D=$(mktemp -d); PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$D"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOST=127.0.0.1:$PORT
cat > "$D/config.yml" <<YAML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $D/storage
http:
  addr: $HOST
YAML
"$REGISTRY" serve "$D/config.yml" > "$D/registry.log" 2>&1 &
PID=$!
for _ in $(seq 100); do (: < "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
export BUNDLEGATE_OCI_INSECURE_REGISTRIES=$HOST

# The model: two large weight files and small configs, published with bundlegate.
mkdir -p "$D/model"
head -c "$((BIG_MB / 2))M" /dev/urandom > "$D/model/model-00001-of-00002.safetensors"
head -c "$((BIG_MB / 2))M" /dev/urandom > "$D/model/model-00002-of-00002.safetensors"
printf '{"model_type": "bench"}\n' > "$D/model/config.json"
printf '{"version": "1.0"}\n' > "$D/model/tokenizer.json"
sed -e 's/^  name: .*/  name: bench/' "$ROOT/examples/llm-scratch/v2/release.yaml" > "$D/release.yaml"
"$BG" publish "$D/model" --to "oci://$HOST/bench/model:v1" --bundle "$D/release.yaml" > /dev/null
MANIFEST=$(sed -n 's/.*storageUri: .*@\(sha256:[0-9a-f]*\).*/\1/p' "$D/release.yaml")
cat "$D/model"/* > /dev/null

t() { /usr/bin/time -f "%e %M" -o "$D/.t" "$@" > "$D/.out" 2> "$D/.err" || { cat "$D/.err" >&2; return 1; }; cat "$D/.t"; }
# best RUNS CMD...: the best time of RUNS and that run's peak RSS ("secs kib").
best() {
  local b="" r="" s k
  for _ in $(seq "$RUNS"); do
    read -r s k < <(t "$@")
    if [ -z "$b" ] || awk -v a="$s" -v b="$b" 'BEGIN{exit !(a<b)}'; then b=$s; r=$k; fi
  done
  echo "$b $r"
}
row() { printf '  %-58s %8ss  %8s KiB\n' "$1" "$2" "$3"; bench_row "$1" "$2" "best of $RUNS" "$3" "$4"; }

read -r ms mk < <(best curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' -o /dev/null "http://$HOST/v2/bench/model/manifests/$MANIFEST")
row "curl: the manifest alone" "$ms" "$mk" -
read -r vs vk < <(best "$BG" verify --format json "$D/release.yaml")
row "bundlegate verify (manifest first)" "$vs" "$vk" "curl: the manifest alone"
bench_note "default verify read $(jq '.steps[0].data.bytesHashed' "$D/.out") blob bytes for $(jq '.steps[0].data.artifacts | length' "$D/.out") files (raw layers judged from the manifest)"

BLOBS=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$HOST/v2/bench/model/manifests/$MANIFEST" | jq -r '.layers[].digest')
printf '%s\n' "$BLOBS" > "$D/blobs"
read -r cs ck < <(best sh -c "xargs -P \$(nproc) -I{} sh -c 'curl -sf http://$HOST/v2/bench/model/blobs/{} | sha256sum' < '$D/blobs'")
row "curl | sha256sum, raw blobs in parallel" "$cs" "$ck" -
read -r ds dk < <(best "$BG" verify --deep --format json "$D/release.yaml")
row "bundlegate verify --deep" "$ds" "$dk" "curl | sha256sum, raw blobs in parallel"

# A tar+gzip layer (as `kit pack` writes archives) holding the two weight files.
tar -C "$D/model" -czf "$D/weights.tar.gz" model-00001-of-00002.safetensors model-00002-of-00002.safetensors
push_blob() {   # push_blob FILE → its digest
  local dg loc
  dg="sha256:$(sha256sum "$1" | cut -d' ' -f1)"
  loc=$(curl -sf -X POST -D - -o /dev/null "http://$HOST/v2/bench/tar/blobs/uploads/" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
  case "$loc" in http*) ;; *) loc="http://$HOST$loc" ;; esac
  case "$loc" in *\?*) loc="$loc&digest=$dg" ;; *) loc="$loc?digest=$dg" ;; esac
  curl -sf -H 'Content-Type: application/octet-stream' -T "$1" "$loc" > /dev/null   # -T streams the file
  echo "$dg"
}
printf '{}' > "$D/config.empty"
CFG=$(push_blob "$D/config.empty"); LAYER=$(push_blob "$D/weights.tar.gz")
jq -n --arg c "$CFG" --arg l "$LAYER" --argjson n "$(stat -c %s "$D/weights.tar.gz")" '{schemaVersion: 2,
  mediaType: "application/vnd.oci.image.manifest.v1+json", artifactType: "application/vnd.cncf.model.manifest.v1+json",
  config: {mediaType: "application/vnd.oci.empty.v1+json", digest: $c, size: 2},
  layers: [{mediaType: "application/vnd.cncf.model.weight.v1.tar+gzip", digest: $l, size: $n,
            annotations: {"org.cncf.model.filepath": "weights"}}]}' > "$D/tar-manifest.json"
curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary "@$D/tar-manifest.json" \
  "http://$HOST/v2/bench/tar/manifests/v1" > /dev/null
TM="sha256:$(sha256sum "$D/tar-manifest.json" | cut -d' ' -f1)"
sed -e "s|storageUri: .*|storageUri: oci://$HOST/bench/tar@$TM|" "$D/release.yaml" > "$D/tar.yaml"
python3 - "$D/tar.yaml" "$D/model" <<'PY'
import hashlib, os, re, sys
path, model = sys.argv[1], sys.argv[2]
text = open(path).read()
arts = []
for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
    h = hashlib.sha256()
    with open(os.path.join(model, name), "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    arts.append(f"      - path: {name}\n        role: weights\n        sha256: {h.hexdigest()}\n        size: {os.path.getsize(os.path.join(model, name))}\n")
# Replace the artifacts list (up to the next key at the same depth).
text = re.sub(r"(    artifacts:\n)(?:      .*\n|        .*\n)+", lambda m: m.group(1) + "".join(arts), text, count=1)
open(path, "w").write(text)
PY
read -r gs gk < <(best sh -c "curl -sf http://$HOST/v2/bench/tar/blobs/$LAYER | gunzip | sha256sum")
row "curl | gunzip | sha256sum, tar+gzip layer" "$gs" "$gk" -
read -r ws wk < <(best "$BG" verify --format json "$D/tar.yaml")
row "bundlegate verify, tar+gzip layer walked" "$ws" "$wk" "curl | gunzip | sha256sum, tar+gzip layer"
jq -e '.steps[0].verdict == "pass"' "$D/.out" > /dev/null || { echo "the tar+gzip verify did not pass:" >&2; jq -r '.steps[0].summary' "$D/.out" >&2; exit 1; }
