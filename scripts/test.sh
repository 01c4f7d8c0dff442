#!/usr/bin/env bash
# The whole test suite, on a fresh machine: formatting, lints, the dependency policy, the
# strict documentation build, a dry run of publishing, then every test (Rust unit, integration,
# UI and doc tests, and the Python SDK, TypeScript SDK and MCP Inspector client tests, whose
# packages the suite installs).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== rmcp-guard with each feature alone (a workspace build unifies features, which hides a missing cfg)"
for features in "" sqlite postgres testing jwt approval witness "witness sqlite"; do
    echo "-- --no-default-features --features '$features'"
    cargo clippy --quiet -p rmcp-guard --no-default-features --features "$features" -- -D warnings
done
echo "== cargo deny check bans licenses sources (deny.toml)"
if ! command -v cargo-deny >/dev/null 2>&1; then
    echo "cargo-deny not found; installing it with cargo install --locked cargo-deny"
    cargo install --locked cargo-deny
fi
# cargo-deny reads the whole graph, every target's crates included: fetch them first.
cargo fetch --quiet
cargo deny --offline check bans licenses sources
echo "== documentation: every public item documented, no broken links (also as docs.rs builds it)"
RUSTDOCFLAGS="-D warnings" cargo doc --all-features --no-deps -p rmcp-guard -p rmcp-guard-macros -p rmcp-guard-test
# docs.rs passes --cfg docsrs (see [package.metadata.docs.rs]), which turns on the nightly
# doc_cfg badges; RUSTC_BOOTSTRAP lets the stable toolchain check that build too.
RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" \
    cargo doc --all-features --no-deps -p rmcp-guard -p rmcp-guard-macros -p rmcp-guard-test --target-dir "${CARGO_TARGET_DIR:-target}/docsrs"
echo "== cargo publish --workspace --dry-run (packages and builds what crates.io would get)"
cargo publish --workspace --dry-run --allow-dirty
echo "== build the example binaries (the process tests drive them)"
cargo build -p safe-ops -p order-cancel -p incident-lab -p minimal -p conformance
echo "== headless Chromium for the approval-page browser tests"
scripts/chromium.sh
echo "== the pinned MCP conformance suite (and the Node.js 22 it runs on)"
scripts/conformance-deps.sh
echo "== cargo test"
cargo test --workspace --no-fail-fast
