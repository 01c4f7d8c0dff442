//! The server's log on stderr: guard's audit lines, safe-ops' own notices, and warnings.
//!
//! Lines are handed to a thread of their own and written there in batches
//! ([`crate::log_writer`]), so a slow stderr (a full pipe, a busy disk) never stalls a tool
//! call on the runtime's workers; no line is dropped when that thread falls behind (the
//! writer then waits), and the rest is flushed when the server exits. Colours only on a terminal. The filter is a static list of targets, read
//! from `RUST_LOG` (`info`, `rmcp=debug,guard=info`, ...), with no regular expressions.

use std::io::{IsTerminal, Write};

use tracing::Level;
use tracing_subscriber::{Layer, filter::Targets, layer::SubscriberExt, util::SubscriberInitExt};

/// Keeps the log's writer thread; dropping it writes out every pending line.
#[must_use = "dropping the guard stops the log's writer thread"]
pub struct LogGuard {
    _flusher: crate::log_writer::Flusher,
}

/// The targets logged when `RUST_LOG` is not set: guard's audit (`guard::audit`) and the
/// runtime's and safe-ops' notices at `info`, everything else (rmcp's per-request spans
/// included) at `warn`. `quiet` (the demo) keeps only warnings.
pub fn default_filter(quiet: bool) -> Targets {
    let ours = if quiet { Level::WARN } else { Level::INFO };
    Targets::new()
        .with_default(Level::WARN)
        .with_target("guard", ours)
        .with_target("rmcp_guard", ours)
        .with_target("safe_ops", ours)
}

/// The filter for `RUST_LOG`'s value: its directives when they parse, else the default and
/// a note saying why.
pub fn filter(rust_log: Option<&str>, quiet: bool) -> (Targets, Option<String>) {
    match rust_log.map(str::trim).filter(|v| !v.is_empty()) {
        None => (default_filter(quiet), None),
        Some(value) => match value.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(e) => (
                default_filter(quiet),
                Some(format!(
                    "RUST_LOG={value:?} is not understood ({e}), so the default log filter is used; write `LEVEL` or `target=LEVEL,...`"
                )),
            ),
        },
    }
}

/// Installs the log for this process, on stderr.
pub fn init(quiet: bool) -> Result<LogGuard, String> {
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    init_with(std::io::stderr(), ansi, quiet)
}

/// Installs the log for this process, written to `out` (benchmarks log to a file exactly as
/// the server logs to stderr).
pub fn init_with(
    out: impl Write + Send + 'static,
    ansi: bool,
    quiet: bool,
) -> Result<LogGuard, String> {
    let (filter, problem) = filter(std::env::var("RUST_LOG").ok().as_deref(), quiet);
    let (writer, flusher) = crate::log_writer::start(out, "safe-ops-log")
        .map_err(|e| format!("cannot start the log's writer thread: {e}"))?;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(ansi)
                .with_filter(filter),
        )
        .init();
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
    Ok(LogGuard { _flusher: flusher })
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::filter::Targets;

    use super::*;

    fn enabled(targets: &Targets, target: &str, level: Level) -> bool {
        targets.would_enable(target, &level)
    }

    #[test]
    fn the_default_keeps_the_audit_and_drops_rmcps_spans() {
        let (targets, problem) = filter(None, false);
        assert!(problem.is_none());
        assert!(enabled(&targets, "guard::audit", Level::INFO));
        assert!(enabled(&targets, "rmcp_guard::exposure", Level::INFO));
        assert!(enabled(&targets, "safe_ops", Level::INFO));
        assert!(!enabled(&targets, "rmcp::service", Level::INFO));
        assert!(!enabled(&targets, "rmcp::service", Level::DEBUG));
        assert!(enabled(&targets, "rmcp::service", Level::WARN));
        assert!(!enabled(&targets, "guard::audit", Level::DEBUG));
    }

    #[test]
    fn the_demo_keeps_only_warnings() {
        let (targets, _) = filter(None, true);
        assert!(!enabled(&targets, "guard::audit", Level::INFO));
        assert!(enabled(&targets, "guard::audit", Level::WARN));
    }

    #[test]
    fn rust_log_chooses_when_it_parses() {
        let (targets, problem) = filter(Some("rmcp=debug,guard=warn"), false);
        assert!(problem.is_none());
        assert!(enabled(&targets, "rmcp::service", Level::DEBUG));
        assert!(!enabled(&targets, "guard::audit", Level::INFO));
        let (everything, _) = filter(Some("info"), false);
        assert!(enabled(&everything, "rmcp::service", Level::INFO));
    }

    #[test]
    fn a_broken_rust_log_falls_back_and_says_why() {
        let (targets, problem) = filter(Some("guard=loud"), false);
        let problem = problem.expect("a note");
        assert!(problem.contains("RUST_LOG=\"guard=loud\""), "{problem}");
        assert!(enabled(&targets, "guard::audit", Level::INFO));
    }
}
