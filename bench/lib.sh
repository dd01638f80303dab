# shellcheck shell=bash
# Sourced by bench/run and the scripts it calls: one way to write a result row.
# Rows go to $BENCH_RESULTS (tab-separated, bench/collect.py turns them into
# bench/results/latest.json); a script run alone (no BENCH_RESULTS) prints only.
#
# Columns: section, name, figure, unit, statistic, peak RSS KiB, baseline row,
# status, reason, budget. The statistic says what the figure is: "median of 5",
# "single run", "best of 20". Status is "ok", "over budget" (reason says by how
# much) or "not measured" (reason says why; figure and RSS are "-").
#
#   bench_row NAME SECONDS STATISTIC RSS_KIB BASELINE [STATUS [REASON [BUDGET]]]
bench_row() {
  [ -n "${BENCH_RESULTS:-}" ] || return 0
  printf '%s\t%s\t%s\ts\t%s\t%s\t%s\t%s\t%s\t%s\n' "${BENCH_SECTION:--}" "$1" "$2" "$3" "$4" "$5" "${6:-ok}" "${7:--}" "${8:--}" >> "$BENCH_RESULTS"
}

# bench_note TEXT: a figure that is not a time (balance, bytes read), shown under the table.
bench_note() {
  [ -n "${BENCH_NOTES:-}" ] || { echo "  $1"; return 0; }
  printf '%s\t%s\n' "${BENCH_SECTION:--}" "$1" >> "$BENCH_NOTES"
}

# statistic_of RUNS → "single run" or "median of RUNS"
statistic_of() { if [ "$1" -gt 1 ]; then echo "median of $1"; else echo "single run"; fi; }
