#!/usr/bin/env bash
# Argo CD plugin speed (issue #8): time `bundlegate argocd generate` for one
# bundle against `kubectl kustomize` on an equivalent overlay (the same
# rendered InferenceService as a resource + a namespace and replicas patch,
# which is what the plugin's `namespace`/`replicas` parameters do).
# Budget: generate <= 10 ms median. Uses hyperfine when installed, else a bash
# loop with `date +%s%N`. Timing is printed, not asserted in tests.
# Usage: bench/argocd-generate.sh [runs]   (builds target/release first;
# NO_HYPERFINE=1 forces the bash loop)
# Exit 0 within the budget, 1 over it (after writing the rows, the generate
# row marked "over budget"), 2 when nothing could be measured. Under bench/run
# the rows go to $BENCH_RESULTS (bench/lib.sh) and bench/run exits 1 too.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
BUDGET_MS=10
RUNS=${1:-200}
BIN=$PWD/target/release/bundlegate
KUBECTL=${KUBECTL:-kubectl}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build --release --quiet
command -v "$KUBECTL" >/dev/null || { echo "kubectl not found (set KUBECTL)" >&2; exit 2; }

cp -r examples/llm-scratch examples/store "$WORK/"
SRC=$WORK/llm-scratch/v2

# The CMP environment Argo would set; parameters as Argo sends them.
export ARGOCD_APP_NAME=llm-scratch ARGOCD_APP_NAMESPACE=argocd ARGOCD_APP_REVISION=4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c
export ARGOCD_APP_SOURCE_PATH=llm-scratch/v2 ARGOCD_APP_SOURCE_REPO_URL=https://github.com/example/models.git
export ARGOCD_APP_PARAMETERS='[{"name":"namespace","string":"staging"},{"name":"replicas","string":"2"}]'

# Equivalent kustomize overlay: base manifests (rendered once, no overrides)
# plus the same two overrides as a namespace transformer and a JSON patch.
mkdir -p "$WORK/overlay"
(cd "$SRC" && ARGOCD_APP_PARAMETERS= "$BIN" argocd generate) > "$WORK/overlay/isvc.yaml"
cat > "$WORK/overlay/kustomization.yaml" <<'K'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: staging
resources:
  - isvc.yaml
patches:
  - target: {group: serving.kserve.io, kind: InferenceService, name: llm-scratch}
    patch: |-
      - op: replace
        path: /spec/predictor/minReplicas
        value: 2
      - op: replace
        path: /spec/predictor/maxReplicas
        value: 2
K

# Same result from both, or the comparison is meaningless.
G=$(cd "$SRC" && "$BIN" argocd generate)
K=$("$KUBECTL" kustomize "$WORK/overlay")
for out in "$G" "$K"; do
  grep -q 'namespace: staging' <<<"$out" && grep -q 'minReplicas: 2' <<<"$out" \
    || { echo "outputs are not equivalent:"; echo "$out"; exit 2; } >&2
done

GEN_CMD="cd '$SRC' && '$BIN' argocd generate"
KUS_CMD="'$KUBECTL' kustomize '$WORK/overlay'"

median_ms() { # command -> median wall time in ms over $RUNS runs
  local cmd=$1 i t0 t1
  for ((i = 0; i < 5; i++)); do bash -c "$cmd" >/dev/null; done
  for ((i = 0; i < RUNS; i++)); do
    t0=$(date +%s%N); bash -c "$cmd" >/dev/null; t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
  done | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.3f", m / 1000}'
}

if [ -z "${NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null; then
  # -N: no intermediate shell, so the numbers are the programs themselves.
  hyperfine -N --warmup 10 --runs "$RUNS" --export-csv "$WORK/times.csv" \
    --command-name "bundlegate argocd generate" "$BIN argocd generate --path $SRC" \
    --command-name "kubectl kustomize" "$KUBECTL kustomize $WORK/overlay" >&2
  GEN=$(awk -F, 'NR==2 {printf "%.3f", $4 * 1000}' "$WORK/times.csv")
  KUS=$(awk -F, 'NR==3 {printf "%.3f", $4 * 1000}' "$WORK/times.csv")
  # On a shared machine wall time includes waiting for a core; CPU time shows
  # what the program itself costs.
  GEN_CPU=$(awk -F, 'NR==2 {printf "%.3f", ($5 + $6) * 1000}' "$WORK/times.csv")
  KUS_CPU=$(awk -F, 'NR==3 {printf "%.3f", ($5 + $6) * 1000}' "$WORK/times.csv")
  HOW="hyperfine -N, $RUNS runs each; mean CPU user+sys: generate ${GEN_CPU} ms, kustomize ${KUS_CPU} ms; load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores"
else
  GEN=$(median_ms "$GEN_CMD")
  KUS=$(median_ms "$KUS_CMD")
  HOW="bash loop with date +%s%N, $RUNS runs (includes a bash -c spawn in both); load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores"
fi

echo "median bundlegate argocd generate: ${GEN} ms"
echo "median kubectl kustomize:          ${KUS} ms"
awk -v g="$GEN" -v k="$KUS" 'BEGIN {printf "ratio kustomize / generate:        %.1fx\n", k / g}'
echo "($HOW)"
STATUS=ok REASON=-
if ! awk -v g="$GEN" -v b="$BUDGET_MS" 'BEGIN {exit !(g <= b)}'; then
  STATUS="over budget" REASON="median ${GEN} ms > ${BUDGET_MS} ms"
fi
if [ -n "${BENCH_RESULTS:-}" ]; then
  # Peak RSS of one run each (the times are the medians above).
  rss() { /usr/bin/time -f %M -o "$WORK/rss" bash -c "$1" >/dev/null 2>&1; cat "$WORK/rss"; }
  secs() { awk -v ms="$1" 'BEGIN {printf "%.6f", ms / 1000}'; }
  bench_row "kubectl kustomize (overlay)" "$(secs "$KUS")" "median of $RUNS" "$(rss "$KUS_CMD")" -
  bench_row "bundlegate argocd generate (CMP)" "$(secs "$GEN")" "median of $RUNS" "$(rss "$GEN_CMD")" \
    "kubectl kustomize (overlay)" "$STATUS" "$REASON" "$BUDGET_MS ms median"
  bench_note "argocd generate vs kubectl kustomize: $HOW"
fi
if [ "$STATUS" = ok ]; then
  echo "within the $BUDGET_MS ms budget"
else
  echo "OVER the $BUDGET_MS ms budget ($REASON)" >&2
  exit 1
fi
