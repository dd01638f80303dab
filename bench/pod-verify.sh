#!/usr/bin/env bash
# verify-files (the in-pod check) vs `openssl dgst -sha256` run in parallel
# (one process per file, one per core) on the same files, mixed sizes.
# Appends rows to $BENCH_RESULTS (bench/lib.sh's columns; one run each).
#   bash bench/pod-verify.sh BIN [BIG_MB]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
BG="$1"; BIG_MB="${2:-1024}"
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
head -c "${BIG_MB}M" /dev/urandom > "$D/big.safetensors"
head -c "$((BIG_MB / 4))M" /dev/urandom > "$D/mid.safetensors"
for i in $(seq 1 32); do head -c 256K /dev/urandom > "$D/small$i.json"; done
ARTS=$(cd "$D" && for f in *; do printf '{"path":"%s","sha256":"%s","size":%s}\n' "$f" "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")"; done | paste -sd, -)
export BUNDLEGATE_ARTIFACTS="{\"releaseDigest\":\"sha256:$(printf '0%.0s' $(seq 64))\",\"artifacts\":[$ARTS]}"
cat "$D"/* > /dev/null   # both runs read from the page cache
t() { /usr/bin/time -f "%e %M" -o "$D/.t" "$@" > /dev/null; cat "$D/.t"; }
read -r os orss < <(t sh -c "cd '$D' && ls | grep -v '^\.' | xargs -P $(nproc) -n 1 openssl dgst -sha256")
read -r bs brss < <(t "$BG" verify-files --root "$D" --marker "$D/.m" --termination-log "$D/.log")
printf '  %-44s %8ss  %8s KiB\n' "openssl dgst -sha256, parallel (pod files)" "$os" "$orss" "verify-files in the pod" "$bs" "$brss"
bench_row "openssl dgst -sha256, parallel (pod files)" "$os" "single run" "$orss" -
bench_row "verify-files in the pod" "$bs" "single run" "$brss" "openssl dgst -sha256, parallel (pod files)"
