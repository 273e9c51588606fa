#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 30) from its seed corpus, with cargo-fuzz on a
# nightly toolchain; skips, saying so, where either is missing. New inputs go to a scratch
# directory, not to the committed seeds. Exits 1 at the first target that fails or finds a crash.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${FUZZ_SECONDS:-30}
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke run skipped: needs cargo-fuzz on a nightly toolchain (rustup toolchain install nightly; cargo install cargo-fuzz)"
    exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo +nightly fuzz list); do
    mkdir -p "$scratch/$target"
    echo "fuzz $target: ${seconds} s"
    # The shipped scenarios and traces seed their targets too, read in place.
    case $target in
        scenario_toml) more=(../scenarios ../validation/scenarios) ;;
        chakra_et) more=(../tests/data/astra_examples/astra-sim/examples/workload/microbenchmarks/all_reduce/4npus_1MB) ;;
        *) more=() ;;
    esac
    status=0
    cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" "${more[@]}" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 \
        >"$scratch/$target.log" 2>&1 || status=$?
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$scratch/$target.log" || true
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$scratch/$target.log" >&2
        echo "fuzz $target: failed (status $status); any failing input is in fuzz/artifacts/$target" >&2
        exit 1
    fi
done
