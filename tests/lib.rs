//! Integration tests live in `tests/*.rs`; UI cases in `tests/ui/`.
