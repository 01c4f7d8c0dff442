//! A capability, asked for: a download link made after the human accepts, opened over HTTP,
//! and refused once altered.

use std::{net::SocketAddr, path::Path};

use rmcp::model::ProtocolVersion;
use rmcp_guard::ops::SqliteStore;
use rmcp_guard_test::testing::Answer;
use serde_json::json;

use super::{Scene, guard, play_on};
use crate::{server::SafeOps, visit};

/// A capability, asked for: the human accepts a link to `report.csv`, the link downloads the
/// file over HTTP from the endpoint safe-ops serves, and the same link with one character of
/// its signature changed is refused.
pub(super) async fn download_link(
    root: &Path,
    db_path: &Path,
    store: &SqliteStore,
) -> Result<(), String> {
    println!("══ A download link: a capability, asked for ══\n");
    let server = SafeOps::open(root, db_path, guard(store)?)?;
    let links = crate::downloads::serve(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        server.sandbox().clone(),
    )
    .await?;
    let scene = Scene {
        tool: "create_download_link",
        args: json!({"path": "report.csv", "minutes": 5}),
        answer: Answer::Accept(json!({"confirm": true})),
        title: "accept: whoever holds the link downloads the file",
    };
    let era = ProtocolVersion::V_2025_11_25;
    let (_, answer) = play_on(server.with_downloads(links), root, db_path, &era, scene).await?;
    let link = answer
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .ok_or_else(|| format!("create_download_link answered no link: {answer}"))?;
    let opened = visit::get(link).await?;
    println!("── the link · opened over HTTP, then with one character of its signature changed");
    println!("   link opens    HTTP {}: {:?}", opened.status, opened.html);
    let last = link.chars().last().unwrap_or('0');
    let altered = format!(
        "{}{}",
        &link[..link.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    let refused = visit::get(&altered).await?;
    println!(
        "   altered link  HTTP {}: {}\n",
        refused.status,
        refused.html.trim_end()
    );
    Ok(())
}
