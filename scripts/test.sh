#!/usr/bin/env bash
# The whole test suite, on a fresh machine: formatting, lints, then every test (Rust unit,
# integration and UI tests, and the Python and TypeScript SDK client tests, whose packages the
# suite installs).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== build the example binaries (the process tests drive them)"
cargo build -p safe-ops -p order-cancel
echo "== cargo test"
cargo test --workspace --no-fail-fast
