//! What the integration test binaries share that needs no dependency: whether a PostgreSQL
//! test runs, is skipped or fails, and the path a test re-runs itself under.
//!
//! The binaries are `guarantees/`, `stores/` and `clients/`, each a `main.rs` with one module
//! per guarantee and the helpers of `support/`; the trybuild cases are `ui.rs` and `ui/`.
//! `README.md` maps each guarantee to the tests that try to break it.

/// The PostgreSQL database the tests may create schemas, roles and databases in.
pub const PG_URL_ENV: &str = "GUARD_TEST_PG_URL";

/// Set (to anything non-empty) by CI services; a test run there must not pass by skipping.
pub const CI_ENV: &str = "CI";

/// What a PostgreSQL test does with the environment it finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Postgres {
    /// `GUARD_TEST_PG_URL` names a database: run against it.
    Run(String),
    /// No database and not CI: skip, and say so loudly.
    Skip,
    /// No database under CI: fail, so a missing database cannot pass as a green run.
    Fail,
}

/// Decides from the values of `GUARD_TEST_PG_URL` and `CI` (`None` when unset). An empty
/// value counts as unset for both.
pub fn postgres(url: Option<&str>, ci: Option<&str>) -> Postgres {
    match (url.filter(|u| !u.is_empty()), ci.filter(|c| !c.is_empty())) {
        (Some(url), _) => Postgres::Run(url.to_owned()),
        (None, Some(_)) => Postgres::Fail,
        (None, None) => Postgres::Skip,
    }
}

/// The value of `GUARD_TEST_PG_URL`, when it is set and not empty. For code that runs only
/// after a test decided to run on PostgreSQL (a child process, a cleanup); a test deciding
/// whether to run calls [`pg_url`].
pub fn configured_pg_url() -> Option<String> {
    std::env::var(PG_URL_ENV).ok().filter(|u| !u.is_empty())
}

/// The PostgreSQL URL `what` runs against. Without one it returns `None` after saying loudly
/// that `what` was skipped, or, when `CI` is set, panics with what to set.
pub fn pg_url(what: &str) -> Option<String> {
    let ci = std::env::var(CI_ENV).ok();
    match postgres(configured_pg_url().as_deref(), ci.as_deref()) {
        Postgres::Run(url) => Some(url),
        Postgres::Skip => {
            eprintln!(
                "SKIPPED: {PG_URL_ENV} is not set, so {what} did not run on PostgreSQL. Set it \
                 (e.g. {PG_URL_ENV}=postgres://postgres@127.0.0.1:5432/test) to run it."
            );
            None
        }
        Postgres::Fail => panic!(
            "{what} did not run on PostgreSQL, and {CI_ENV} is set, so this fails rather than \
             pass by skipping: set {PG_URL_ENV} to a database the tests may create schemas in (e.g. \
             {PG_URL_ENV}=postgres://postgres@127.0.0.1:5432/test, as .ci/run does)"
        ),
    }
}

/// The name libtest knows a test by, for a test that re-runs its own binary filtered to
/// itself: `module_path` is the test's `module_path!()` (whose first segment is the binary's
/// crate name, which libtest leaves out), `name` its function's name.
pub fn test_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_url_runs_with_or_without_ci() {
        let url = "postgres://postgres@127.0.0.1:5432/test";
        for ci in [None, Some(""), Some("true"), Some("1")] {
            assert_eq!(postgres(Some(url), ci), Postgres::Run(url.to_owned()));
        }
    }

    #[test]
    fn no_url_skips_outside_ci() {
        assert_eq!(postgres(None, None), Postgres::Skip);
        assert_eq!(postgres(Some(""), None), Postgres::Skip);
        assert_eq!(postgres(None, Some("")), Postgres::Skip);
    }

    #[test]
    fn no_url_fails_under_ci_whatever_ci_is_set_to() {
        for ci in ["true", "1", "yes", "false"] {
            assert_eq!(postgres(None, Some(ci)), Postgres::Fail, "CI={ci}");
            assert_eq!(postgres(Some(""), Some(ci)), Postgres::Fail, "CI={ci}");
        }
    }

    #[test]
    fn test_name_leaves_out_the_crate() {
        assert_eq!(
            test_name("stores::audit_log_detects_tampering", "one_log"),
            "audit_log_detects_tampering::one_log"
        );
        assert_eq!(test_name("guarantees", "top"), "top");
    }
}
