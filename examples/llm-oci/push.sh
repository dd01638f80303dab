#!/usr/bin/env bash
# Start a local OCI registry (CNCF Distribution: Debian's `docker-registry`, or any `registry`
# binary given in DOCKER_REGISTRY) on 127.0.0.1:5000 and publish the llm-scratch v2 model files
# to it as a CNCF ModelPack artifact with `bundlegate publish --to oci://…`; then verify
# examples/llm-oci/v2/release.yaml against it. The manifest publish writes depends on the
# files, their roles and the bundle's name and version only, so it is the digest the example
# bundle pins.
#
#   examples/llm-oci/push.sh            # the registry keeps running; the script says how to stop it
#   BUNDLEGATE=target/debug/bundlegate examples/llm-oci/push.sh
#
# Plain HTTP to the loopback registry is allowed through BUNDLEGATE_OCI_INSECURE_REGISTRIES only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundlegate=${BUNDLEGATE:-bundlegate}
registry=${DOCKER_REGISTRY:-$(command -v docker-registry || echo /usr/bin/docker-registry)}
host=127.0.0.1:5000

if (: </dev/tcp/127.0.0.1/5000) 2>/dev/null; then
  echo "something already listens on $host; stop it first" >&2
  exit 1
fi
work=$(mktemp -d)
cat >"$work/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: $host
YAML
"$registry" serve "$work/config.yml" >"$work/registry.log" 2>&1 &
pid=$!
# On a failure the registry goes with the script; on success it keeps running.
trap 'kill "$pid" 2>/dev/null' ERR
for _ in $(seq 100); do
  (: </dev/tcp/127.0.0.1/5000) 2>/dev/null && break
  sleep 0.1
done
echo "registry on $host (pid $pid, storage and log in $work)"

export BUNDLEGATE_OCI_INSECURE_REGISTRIES=$host
# publish rewrites the bundle it is given (storageUri, each file's sha256 and size): give it a
# copy, and compare what it pinned with what the example pins.
cp "$here/v2/release.yaml" "$work/release.yaml"
"$bundlegate" publish "$repo/examples/store/llm-scratch/v2" \
  --to "oci://$host/models/llm-scratch:v2" --bundle "$work/release.yaml"
pinned=$(grep 'storageUri:' "$here/v2/release.yaml")
published=$(grep 'storageUri:' "$work/release.yaml")
if [ "$pinned" != "$published" ]; then
  echo "publish pinned another manifest than the example:" >&2
  echo "  example:   $pinned" >&2
  echo "  published: $published" >&2
  kill "$pid"
  exit 1
fi
"$bundlegate" verify "$here/v2/release.yaml"
echo
echo "verify again:  BUNDLEGATE_OCI_INSECURE_REGISTRIES=$host $bundlegate verify $here/v2/release.yaml"
echo "pull with oras: oras pull --plain-http $host/models/llm-scratch:v2"
echo "stop:          kill $pid; rm -r $work"
