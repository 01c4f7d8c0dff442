#!/usr/bin/env bash
# Every benchmark in BENCHMARKS.md in one run: builds the release binaries, then runs the
# end-to-end stdio bench, the in-process bench, the routing bench, the two-phase bench and the
# audit bench, and prints every figure as a ratio against its baseline measured in the same run
# (lines starting RATIO; the audit log's verify rate is a rate of one core, printed as such).
#
#   scripts/bench.sh                 # everything (about 15 minutes on two cores)
#   BENCH=e2e scripts/bench.sh       # only some: any of e2e,inprocess,routing,twophase,audit
#
# The PostgreSQL half of the two-phase bench needs GUARD_TEST_PG_URL (for example
# postgres://postgres@127.0.0.1:5432/test); without it that half is skipped, loudly (and fails
# when CI is set).
# Other knobs: BENCH_ROUNDS, BENCH_CALLS, BENCH_CLIENTS (end-to-end bench); TWO_PHASE_CLIENTS
# (default 1,4,16,64) and TWO_PHASE_STORES (default sqlite,postgres) for the two-phase bench.
set -euo pipefail
cd "$(dirname "$0")/.."

which_benches="${BENCH:-e2e,inprocess,routing,twophase,audit}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="$(mktemp -d "${TMPDIR:-/tmp}/guard-bench.XXXXXX")"
trap 'rm -rf "$out"' EXIT
wants() { [[ ",$which_benches," == *",$1,"* ]]; }
criterion="$target/criterion"
# A criterion estimate in ns: the slope where it sampled linearly (what it prints), else the
# mean (flat sampling).
mean() { jq '(.slope // .mean).point_estimate' "$criterion/$1/new/estimates.json"; }

if wants e2e; then
    echo "== release binaries"
    # safe-ops as shipped (HTTP and the demo included), then as a stdio-only server.
    cargo build --release --quiet -p safe-ops
    cp "$target/release/safe-ops" "$out/safe-ops-full"
    cargo build --release --quiet -p safe-ops --no-default-features
    cp "$target/release/safe-ops" "$out/safe-ops"
    cargo build --release --quiet -p hand-written-delete
    cargo build --release --quiet -p stdio-bench
    size() { stat -c %s "$1"; }
    full=$(size "$out/safe-ops-full"); stdio=$(size "$out/safe-ops")
    hand=$(size "$target/release/hand-written-delete")
    echo "binary size: safe-ops $((full / 1024)) KiB (stdio only: $((stdio / 1024)) KiB), hand-written $((hand / 1024)) KiB"
    awk -v f="$full" -v s="$stdio" -v h="$hand" 'BEGIN {
        printf "RATIO size safe-ops ÷ hand-written = %.2f   stdio-only safe-ops ÷ hand-written = %.2f\n", f / h, s / h }'

    echo "== end to end over stdio (safe-ops stdio-only build vs hand-written)"
    "$target/release/stdio-bench" --guard "$out/safe-ops" \
        --hand "$target/release/hand-written-delete" \
        --rounds "${BENCH_ROUNDS:-6}" --calls "${BENCH_CALLS:-150}" \
        --clients "${BENCH_CLIENTS:-1,8}"
    echo "== startup and idle RSS of safe-ops as shipped (HTTP and demo included)"
    "$target/release/stdio-bench" --guard "$out/safe-ops-full" \
        --hand "$target/release/hand-written-delete" --only-startup
fi

if wants inprocess; then
    echo "== in process (criterion bench delete_file, interleaved)"
    cargo bench --quiet -p guard-tests --bench delete_file -- delete_file_parts
fi

if wants routing; then
    echo "== per-call routing cost: one server with 100 tools against one with 1 tool, interleaved"
    cargo bench --quiet -p guard-tests --bench routing
fi

if wants twophase; then
    echo "== two-phase pairs against the durable-commit ceiling"
    # Figures of an earlier run must not pass for this one's.
    rm -rf "$criterion/two_phase_sqlite" "$criterion/two_phase_postgres"
    cargo bench --quiet -p guard-tests --bench two_phase -- --noplot
    for store in sqlite postgres; do
        if [[ ! -d "$criterion/two_phase_$store" ]]; then
            echo "two-phase $store: not measured in this run (see above)"
            continue
        fi
        for n in 1 4 16 64; do
            # TWO_PHASE_CLIENTS may have measured only some.
            [[ -d "$criterion/two_phase_$store/pairs_$n/new" ]] || continue
            pairs=$(mean "two_phase_$store/pairs_$n")
            row=$(mean "two_phase_$store/one_row_tx_$n")
            # A pair is two durable commits, so the ceiling is half the one-row commit rate.
            awk -v p="$pairs" -v r="$row" -v s="$store" -v n="$n" 'BEGIN {
                printf "two-phase %s, %s client(s): %.0f pairs/s, %.0f one-row commits/s\n", s, n, 1e9 / p, 1e9 / r
                printf "RATIO two-phase %s/%s pairs ÷ (commits ÷ 2) = %.3f\n", s, n, 2 * r / p }'
        done
        if [[ -d "$criterion/two_phase_$store/pairs_1/new" && -d "$criterion/two_phase_$store/pairs_16/new" ]]; then
            awk -v one="$(mean "two_phase_$store/pairs_1")" -v many="$(mean "two_phase_$store/pairs_16")" -v s="$store" 'BEGIN {
                printf "RATIO two-phase %s pairs/s at 16 clients ÷ at 1 = %.2f\n", s, one / many }'
        fi
    done
fi

if wants audit; then
    echo "== audit log: verify rate of one core, and a confirmed call with the log ÷ without"
    rm -rf "$criterion/audit_verify" "$criterion/audit_write"
    cargo bench --quiet -p guard-tests --bench audit -- --noplot
    for source in records export; do
        # 200,000 records a verification, timed in CPU nanoseconds of the verifying thread.
        awk -v t="$(mean "audit_verify/$source")" -v s="$source" 'BEGIN {
            printf "audit verify from %s: %.2f M records/s of one core (goal: 1)\n", s, 200000 / t * 1e3 }'
    done
    awk -v w="$(mean audit_write/with_log)" -v o="$(mean audit_write/without_log)" 'BEGIN {
        printf "RATIO audit confirmed call with the log ÷ without = %.2f (%.0f vs %.0f µs)\n", w / o, w / 1e3, o / 1e3 }'
fi
