// Argument fields may be scalars, `Option`/`Box`/lists of allowed types, a nested struct that
// derives `ToolArgs` (its names are checked too) and a unit-only enum of choices. A raw
// identifier's wire name has no `r#`.

use std::path::PathBuf;

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Soft,
    Hard,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
struct Window {
    start: String,
    minutes: u32,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
struct CleanupArgs {
    r#type: String,
    root: PathBuf,
    mode: Mode,
    window: Option<Window>,
    windows: Vec<Window>,
    tags: Vec<String>,
    limit: Option<u64>,
    ratio: f64,
    dry_run: bool,
    marker: char,
    boxed: Box<Window>,
    nested: Option<Vec<Option<Mode>>>,
    labels: std::collections::BTreeSet<String>,
    seen: std::collections::HashSet<u32>,
    queue: std::collections::VecDeque<Window>,
}

fn main() {
    let args: CleanupArgs = serde_json::from_value(serde_json::json!({
        "type": "logs",
        "root": "/var/log",
        "mode": "hard",
        "window": {"start": "02:00", "minutes": 30},
        "windows": [],
        "tags": ["a"],
        "limit": null,
        "ratio": 0.5,
        "dry_run": true,
        "marker": "x",
        "boxed": {"start": "03:00", "minutes": 5},
        "nested": [null, "soft"],
        "labels": ["b", "a"],
        "seen": [1, 1],
        "queue": [{"start": "04:00", "minutes": 1}],
    }))
    .unwrap();
    assert_eq!(args.r#type, "logs");
    assert_eq!(args.mode, Mode::Hard);
    assert_eq!(args.window.unwrap().minutes, 30);
    assert_eq!(args.boxed.start, "03:00");
    assert_eq!(args.nested, Some(vec![None, Some(Mode::Soft)]));
    assert_eq!(args.labels.len() + args.seen.len() + args.queue.len(), 4);
    assert!(args.root.ends_with("log") && args.windows.is_empty() && args.tags.len() == 1);
    assert!(args.limit.is_none() && args.dry_run && args.marker == 'x' && args.ratio == 0.5);
}
