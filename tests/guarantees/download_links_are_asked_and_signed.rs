//! A tool that creates a capability, on both protocol eras: safe-ops' `create_download_link`
//! asks the human with the file, its size, the link's lifetime and that its holder asks
//! nobody; decline, cancel and a file replaced during the question make no link; an accepted
//! link downloads exactly that file from the endpoint safe-ops serves, and only while it is
//! unaltered, unexpired and the file unchanged, and never after its process ended. No
//! request reaches a byte outside the sandbox, and a server that serves no links asks nobody
//! for one.

use std::time::Duration;

use crate::support::{over_http::serve_http, stdio, *};
use rmcp::model::ProtocolVersion;
use rmcp_guard::{Code, outcome::Outcome, sandbox::Lookup};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

both_eras!(
    a_link_is_asked_with_its_boundary_and_downloads_the_file,
    decline_and_cancel_make_no_link,
    a_file_replaced_during_the_question_gets_no_link,
    without_a_download_endpoint_nobody_is_asked
);

fn tick() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

/// The link in an answer.
fn link_in(answer: &str) -> &str {
    answer
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no link in: {answer}"))
}

/// Calls `create_download_link` with `args`.
async fn create_link<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    args: serde_json::Value,
) -> rmcp::model::CallToolResult {
    call(client, "create_download_link", args).await
}

/// A link accepted for `path` on `server`, asked of a fresh client on 2025-11-25.
async fn accepted_link(server: safe_ops::SafeOps, path: &str) -> String {
    let human = ScriptedHuman::new(PUSH);
    human.will(tick());
    let client = connect(server, human).await;
    let result = create_link(&client, json!({"path": path})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::Executed);
    link_in(&text(&result)).to_owned()
}

/// `GET target` (a path and query, sent as written, never normalised) from the endpoint a
/// link of `link`'s points at: the status and the body.
async fn fetch(link: &str, target: &str) -> (u16, String) {
    let host = link
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
        .map(|(host, _)| host)
        .unwrap_or_else(|| panic!("not a loopback link: {link}"));
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("the endpoint answers")
        .unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    (status, body.to_owned())
}

/// The path and query of `link`, as a request sends them.
fn target(link: &str) -> String {
    let (_, rest) = link.split_once("/download/").expect("a download link");
    format!("/download/{rest}")
}

async fn a_link_is_asked_with_its_boundary_and_downloads_the_file(era: ProtocolVersion) {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let client = connect(server, human.clone()).await;
    let result = create_link(&client, json!({"path": "report.csv", "minutes": 5})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::Executed);

    let [shown] = &human.shown()[..] else {
        panic!("one question: {:?}", human.shown());
    };
    assert!(
        shown.message.starts_with(
            "Show the agent a download link, valid for 5 minutes, that lets whoever holds it \
             download, without asking anyone, the 16 bytes of file report.csv: 1 link.\n\n\
             It creates a link or token that lets whoever holds it read the data without asking anyone again."
        ),
        "{}",
        shown.message
    );
    let answer = text(&result);
    assert!(
        answer.starts_with("Download link to report.csv (16 bytes), valid for 5 minutes, until "),
        "{answer}"
    );
    assert!(
        answer.contains("It stops working if the file changes or safe-ops stops"),
        "{answer}"
    );
    assert!(
        !answer.contains(&world.base.display().to_string()),
        "the link names the file relative to the sandbox: {answer}"
    );
    let link = link_in(&answer);
    assert!(
        link.contains("/download/report.csv?expires=") && link.contains("&sig="),
        "{link}"
    );
    assert_eq!(fetch(link, &target(link)).await, (200, REPORT.to_owned()));
    // A capability, not a one-time token: it opens again until it expires.
    assert_eq!(fetch(link, &target(link)).await, (200, REPORT.to_owned()));
}

async fn decline_and_cancel_make_no_link(era: ProtocolVersion) {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    for (answer, expected) in [
        (Answer::Decline, Outcome::Declined),
        (Answer::Cancel, Outcome::Cancelled),
    ] {
        let human = ScriptedHuman::new(era.clone());
        human.will(answer);
        let client = connect(server.clone(), human.clone()).await;
        let result = create_link(&client, json!({"path": "report.csv"})).await;
        let _ = client.cancel().await;
        assert_natural(&result, expected);
        assert!(!text(&result).contains("http"), "{}", text(&result));
        assert!(
            text(&result).contains("nothing was shown (create_download_link did not run)"),
            "{}",
            text(&result)
        );
        assert_eq!(human.shown().len(), 1, "{expected:?}: asked once");
    }
}

async fn a_file_replaced_during_the_question_gets_no_link(era: ProtocolVersion) {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let path = world.path("report.csv");
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let observer = Observer::new(human.clone()).while_asked(move || {
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "id,total\n1,0\n").unwrap();
    });
    let client = connect(server, observer).await;
    let result = create_link(&client, json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    assert_refused(&result, Code::StateChanged, Outcome::StateChanged);
    assert!(!text(&result).contains("http"), "{}", text(&result));
    assert_eq!(human.shown().len(), 1);
}

async fn without_a_download_endpoint_nobody_is_asked(era: ProtocolVersion) {
    let world = World::new();
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let client = connect(world.server(), human.clone()).await;
    let result = create_link(&client, json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::PreconditionFailed);
    assert!(
        text(&result).starts_with(
            "No link was made: this safe-ops serves no download links, so a link could not be opened. \
             The operator enables them by starting safe-ops with --downloads 127.0.0.1:0"
        ),
        "{}",
        text(&result)
    );
    assert!(human.shown().is_empty(), "nobody was asked");
}

#[tokio::test]
async fn altered_links_are_refused_and_nothing_outside_the_sandbox_is_served() {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    std::os::unix::fs::symlink(&world.outside, world.path("out")).unwrap();
    let link = accepted_link(server, "report.csv").await;
    let good = target(&link);
    let query = good.split_once('?').unwrap().1;
    let sig = query.rsplit_once("sig=").unwrap().1;
    let flipped = if sig.ends_with('0') { "1" } else { "0" };
    for (what, request) in [
        (
            "an altered signature",
            format!("{}{flipped}", &good[..good.len() - 1]),
        ),
        ("no signature", good.replace(&format!("&sig={sig}"), "")),
        ("another file", good.replace("report.csv", "old.log")),
        ("a later expiry", good.replace("expires=", "expires=9")),
        ("..", format!("/download/../outside.txt?{query}")),
        (
            "encoded ..",
            format!("/download/%2e%2e/outside.txt?{query}"),
        ),
        (
            "encoded ../",
            format!("/download/report.csv%2F..%2F..%2Foutside.txt?{query}"),
        ),
        ("an absolute path", format!("/download//etc/passwd?{query}")),
        ("a symlink out", format!("/download/out?{query}")),
    ] {
        let (status, body) = fetch(&link, &request).await;
        assert_eq!(status, 403, "{what}: {request}: {body}");
        assert!(
            body.starts_with("This download link is not valid: its signature does not match."),
            "{what}: {body}"
        );
        assert!(!body.contains(OUTSIDE) && !body.contains(REPORT), "{what}");
    }
    assert_eq!(fetch(&link, &good).await, (200, REPORT.to_owned()));
}

#[tokio::test]
async fn expired_replaced_and_removed_files_are_refused() {
    let world = World::new();
    let (server, links) = world.server_with_downloads().await;
    let Lookup::File(entry) = server.sandbox().resolve("report.csv").unwrap() else {
        panic!("report.csv is in the sandbox");
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Signed by the endpoint's own key, a second in the past.
    let expired = links.link(&entry, now - 1);
    let (status, body) = fetch(&expired, &target(&expired)).await;
    assert_eq!(status, 410, "{body}");
    assert!(
        body.starts_with("This download link expired at ") && !body.contains(REPORT),
        "{body}"
    );

    let link = accepted_link(server, "report.csv").await;
    std::fs::remove_file(world.path("report.csv")).unwrap();
    std::fs::write(world.path("report.csv"), "id,total\n1,0\n").unwrap();
    let (status, body) = fetch(&link, &target(&link)).await;
    assert_eq!(status, 410, "{body}");
    assert!(
        body.starts_with("The file changed or was replaced after this link was made"),
        "{body}"
    );
    assert!(!body.contains("1,0"), "{body}");
    std::fs::remove_file(world.path("report.csv")).unwrap();
    let (status, body) = fetch(&link, &target(&link)).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.starts_with("The file this link was made for is gone"),
        "{body}"
    );
}

#[tokio::test]
async fn bad_input_and_missing_files_ask_nobody() {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let human = ScriptedHuman::new(PUSH);
    let client = connect(server, human.clone()).await;
    for minutes in [0, 61] {
        let result = create_link(&client, json!({"path": "report.csv", "minutes": minutes})).await;
        assert!(is_error(&result), "{}", text(&result));
        assert_eq!(code(&result).as_deref(), Some(Code::InvalidInput.as_str()));
        assert!(
            text(&result).contains(&format!(
                "minutes = {minutes} is not a lifetime a link gets: give 1 to 60"
            )),
            "{}",
            text(&result)
        );
    }
    for path in ["../outside.txt", "/etc/passwd"] {
        let result = create_link(&client, json!({"path": path})).await;
        assert_eq!(
            code(&result).as_deref(),
            Some(Code::InvalidInput.as_str()),
            "{path}: {}",
            text(&result)
        );
        assert!(!text(&result).contains("http"), "{}", text(&result));
    }
    let result = create_link(&client, json!({"path": "gone.csv"})).await;
    assert_natural(&result, Outcome::PreconditionFailed);
    assert_eq!(text(&result), "File not found, no link was made: gone.csv");
    let _ = client.cancel().await;
    assert!(human.shown().is_empty(), "nobody was asked");
}

#[tokio::test]
async fn a_session_gets_ten_links() {
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let human = ScriptedHuman::new(PUSH);
    for _ in 0..11 {
        human.will(tick());
    }
    let client = connect(server, human.clone()).await;
    for _ in 0..10 {
        let result = create_link(&client, json!({"path": "report.csv"})).await;
        assert_natural(&result, Outcome::Executed);
    }
    let result = create_link(&client, json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    assert!(
        text(&result).contains("per session, 10 were shown already"),
        "{}",
        text(&result)
    );
    assert_eq!(human.shown().len(), 10, "the eleventh asked nobody");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_on_2026_07_28_a_client_gets_ten_links() {
    // rmcp builds a service per request here: the ten must outlive each of them.
    let world = World::new();
    let (server, _) = world.server_with_downloads().await;
    let http = serve_http(server).await;
    let human = ScriptedHuman::new(MRTR);
    for _ in 0..11 {
        human.will(tick());
    }
    let client = http.connect(human.clone(), None).await;
    for _ in 0..10 {
        let result = create_link(&client, json!({"path": "report.csv"})).await;
        assert_natural(&result, Outcome::Executed);
    }
    let result = create_link(&client, json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    let said = text(&result);
    assert!(
        said.contains("per session, 10 were shown already"),
        "{said}"
    );
    assert!(said.contains("The limit starts again at "), "{said}");
    assert!(!said.contains("http://"), "no link: {said}");
    assert_eq!(human.shown().len(), 10, "the eleventh asked nobody");
}

#[tokio::test]
async fn tools_list_shows_a_read_only_tool_that_discloses_a_capability() {
    let world = World::new();
    let client = connect(world.server(), ScriptedHuman::new(PUSH)).await;
    let tools = client.list_all_tools().await.unwrap();
    let _ = client.cancel().await;
    let tool = tools
        .iter()
        .find(|t| t.name == "create_download_link")
        .expect("create_download_link is published");
    let hints = tool
        .annotations
        .as_ref()
        .map(|h| (h.read_only_hint, h.destructive_hint));
    assert_eq!(
        hints,
        Some((Some(true), Some(false))),
        "read-only, not destructive"
    );
    assert_eq!(
        serde_json::to_value(&tool.meta).unwrap()["guard"],
        json!({"discloses": "capability", "max_items": 1, "session_max_items": 10})
    );
    let description = tool.description.as_deref().unwrap();
    assert!(
        description.contains("\n\nDiscloses capability: It creates a link or token"),
        "{description}"
    );
}

/// Asks safe-ops over stdio for a link to `report.csv`, accepting its question.
fn link_over_stdio(server: &mut stdio::StdioServer) -> String {
    let answer = server.call_answering(
        "create_download_link",
        json!({"path": "report.csv"}),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    link_in(text).to_owned()
}

/// The binary: `--downloads ADDR` serves the links its tool makes, and a link does not
/// outlive its process: a new process serving the same address (named in
/// `SAFE_OPS_DOWNLOADS`) refuses it. An address off loopback stops safe-ops at start.
#[tokio::test]
async fn the_binary_serves_its_links_and_they_end_with_the_process() {
    let dir = tempfile::tempdir().unwrap();
    drop(safe_ops::db::open(&dir.path().join("ops.db")).unwrap());
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/report.csv"), REPORT).unwrap();
    let form = json!({"elicitation": {"form": {}}});
    let mut first = stdio::StdioServer::start_declaring(
        dir.path(),
        &["--downloads", "127.0.0.1:0"],
        &[],
        form.clone(),
    );
    let link = link_over_stdio(&mut first);
    assert_eq!(fetch(&link, &target(&link)).await, (200, REPORT.to_owned()));
    let log = first.stop();
    let addr = link
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
        .map(|(addr, _)| addr.to_owned())
        .unwrap();
    assert!(
        log.contains(&format!("download links are served at http://{addr}")),
        "{log}"
    );
    assert!(!log.contains("sig="), "no link reaches the log: {log}");

    let second = stdio::StdioServer::start_declaring(
        dir.path(),
        &[],
        &[("SAFE_OPS_DOWNLOADS", addr.as_str())],
        form,
    );
    let (status, body) = fetch(&link, &target(&link)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("made by an earlier run of safe-ops"),
        "{body}"
    );
    drop(second.stop());

    let refused = std::process::Command::new(stdio::safe_ops_bin())
        .arg("--root")
        .arg(dir.path().join("files"))
        .arg("--db")
        .arg(dir.path().join("ops.db"))
        .args(["--downloads", "0.0.0.0:0"])
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("--downloads 0.0.0.0:0: safe-ops serves download links on loopback only"),
        "{said}"
    );
}
