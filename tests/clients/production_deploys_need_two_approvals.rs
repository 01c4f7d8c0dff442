//! safe-ops' production deploys: `deploy` never deploys to production and names
//! `deploy_production`, which runs only after two people other than the requester approved
//! on safe-ops' approval page. Both protocol eras, with a real rmcp client that declares URL
//! elicitation; the approvers' links arrive by signed webhook at safe-ops' receiver, and the
//! page is read and decided over HTTP as a person's browser would. A pending approval
//! survives the safe-ops process being killed and started again.

use crate::support;

use crate::support::approval as bench;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use crate::support::{World, assert_natural, assert_refused, call, stdio::StdioServer, text};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetTaskParams, ProtocolVersion, TaskPayload,
    TaskStatus,
};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{Guard, Identity, approval::WebhookNotifier};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use safe_ops::{SafeOps, receiver::Receiver, visit};
use serde_json::json;

const SECRET: &[u8] = b"a webhook secret of 32+ bytes, test only";

/// safe-ops on `world` with its approval page: alice requests, `approvers` approve, their
/// links signed and posted to a receiver.
async fn with_page(world: &World, approvers: &[&str]) -> (SafeOps, Receiver) {
    let receiver = Receiver::start(SECRET.to_vec()).await.unwrap();
    let notifier = WebhookNotifier::new(&receiver.url(), SECRET).unwrap();
    let approvers = safe_ops::approval::approvers(
        &approvers
            .iter()
            .map(|a| (*a).to_owned())
            .collect::<Vec<_>>(),
        &Identity::new("local", "alice", Vec::<String>::new()),
    );
    let page = safe_ops::approval::start(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Identity::new("local", "alice", Vec::<String>::new()),
        &approvers,
        Some(Box::new(notifier)),
    )
    .await
    .expect("the approval page starts");
    let guard = Guard::ephemeral().unwrap().with_approval_page(page);
    (world.server_with(guard), receiver)
}

async fn deploy_names_deploy_production_for_any_spelling_of_production(era: ProtocolVersion) {
    let world = World::new();
    let human = ScriptedHuman::new(era);
    let client = support::connect(world.server(), human.clone()).await;
    for environment in [
        "production",
        "Production",
        " PROD ",
        "prod-eu",
        "pro\u{200b}duction",
    ] {
        let result = call(
            &client,
            "deploy",
            json!({"service": "billing", "environment": environment}),
        )
        .await;
        assert_natural(&result, Outcome::PreconditionFailed);
        assert!(
            text(&result).contains("call deploy_production with service `billing`"),
            "{environment:?}: {}",
            text(&result)
        );
    }
    let result = call(
        &client,
        "deploy",
        json!({"service": "billing", "environment": "qa"}),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidInput,
        Outcome::PreviewFailed,
    );
    assert!(
        text(&result).contains("deploy_production"),
        "{}",
        text(&result)
    );
    assert!(human.shown().is_empty(), "nobody was asked");
    assert!(world.deployments().is_empty());
    // Staging, named or by default, is deploy's: the form is shown.
    for args in [
        json!({"service": "billing", "environment": "staging"}),
        json!({"service": "billing"}),
    ] {
        human.will(Answer::Decline);
        assert_natural(&call(&client, "deploy", args).await, Outcome::Declined);
    }
    assert_eq!(human.shown().len(), 2);
    let _ = client.cancel().await;
}

async fn deploy_production_runs_once_after_two_approvals_on_the_page(era: ProtocolVersion) {
    let world = World::new();
    let (server, receiver) = with_page(&world, &["alice", "Alice", "bob", "carol"]).await;
    let (client, mut urls) = bench::url_client(era, true);
    let client = Arc::new(bench::connect(server, client).await);
    let calling = client.clone();
    let call = tokio::spawn(async move {
        calling
            .call_tool(
                CallToolRequestParams::new("deploy_production")
                    .with_arguments(json!({"service": "billing"}).as_object().unwrap().clone()),
            )
            .await
            .expect("tools/call")
    });
    let (url, _, message) = tokio::time::timeout(Duration::from_secs(30), urls.recv())
        .await
        .expect("the client is sent to the page")
        .unwrap();
    assert!(
        message.contains("Production deploy: two people other than the requester must approve."),
        "{message}"
    );
    assert!(
        message.contains("Deploy service `billing` to production"),
        "{message}"
    );
    let page = visit::get(&url).await.unwrap().text();
    assert!(page.contains("Approve deploy_production?"), "{page}");
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(page.contains("alice (local)"), "{page}");
    assert!(
        !page.contains("[Approve]"),
        "the requester cannot approve: {page}"
    );

    let mut links = std::collections::BTreeMap::new();
    for user in ["bob", "carol"] {
        let link = receiver
            .link_for(user, Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no link reached {user}"));
        links.insert(user, link.url);
    }
    let link = |user: &str| links[user].clone();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let delivered: Vec<String> = receiver.links().into_iter().map(|l| l.approver).collect();
    assert_eq!(
        delivered.len(),
        2,
        "bob and carol, never alice: {delivered:?}"
    );
    assert_eq!(receiver.refused(), 0);
    let wrong = visit::approve(&link("bob"), "Billing").await.unwrap();
    assert_eq!(wrong.status, 422, "{}", wrong.text());
    let page = visit::approve(&link("bob"), "billing")
        .await
        .unwrap()
        .text();
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        world.deployments().is_empty(),
        "one approval deploys nothing"
    );
    let page = visit::approve(&link("carol"), "billing")
        .await
        .unwrap()
        .text();
    assert!(
        page.contains("Approved: the action goes ahead as described above."),
        "{page}"
    );

    let result = call.await.unwrap();
    assert_natural(&result, Outcome::Executed);
    assert!(text(&result).contains("Deployment of billing to production submitted"));
    assert_eq!(
        world.deployments(),
        [(
            "billing".to_owned(),
            "production (two approvers)".to_owned(),
            String::new()
        )]
    );
}

async fn deploy_production_without_two_approvers_refuses_and_says_why(era: ProtocolVersion) {
    let world = World::new();
    let (server, receiver) = with_page(&world, &["bob"]).await;
    let (client, _urls) = bench::url_client(era, true);
    let client = bench::connect(server, client).await;
    let result = call(&client, "deploy_production", json!({"service": "billing"})).await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidState,
        Outcome::Misconfigured,
    );
    assert!(
        text(&result).contains("Tell the operator"),
        "{}",
        text(&result)
    );
    assert!(receiver.links().is_empty());
    assert!(world.deployments().is_empty());
}

async fn deploy_production_from_a_client_without_url_mode_fails_closed(era: ProtocolVersion) {
    let world = World::new();
    let (server, _receiver) = with_page(&world, &["bob", "carol"]).await;
    let client = support::connect(server, ScriptedHuman::new(era)).await;
    let result = call(&client, "deploy_production", json!({"service": "billing"})).await;
    assert_natural(&result, Outcome::UnsupportedClient);
    assert!(world.deployments().is_empty());
}

/// On 2026-07-28 safe-ops serves guard's tasks: a client that declares them gets
/// `deploy_production` as a task, polls it while bob and carol approve, and gets the deploy's
/// natural result once, from the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_production_is_a_task_for_a_client_with_tasks() {
    let world = World::new();
    let (server, receiver) = with_page(&world, &["bob", "carol"]).await;
    let (client, _urls) = bench::url_client(bench::MRTR, true);
    let client = bench::connect(server, client.with_tasks()).await;
    let response = client
        .call_tool_once(
            CallToolRequestParams::new("deploy_production")
                .with_arguments(json!({"service": "billing"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("expected a task, got {response:?}");
    };
    let id = created.task.task_id;
    let pending = client.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(pending.task.status(), TaskStatus::InputRequired);
    for user in ["bob", "carol"] {
        let link = receiver
            .link_for(user, Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no link reached {user}"));
        visit::approve(&link.url, "billing").await.unwrap();
    }
    let mut done = None;
    for _ in 0..300 {
        let task = client.get_task(GetTaskParams::new(&id)).await.unwrap();
        if task.task.status().is_terminal() {
            done = Some(task);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = done.expect("the task ends");
    let TaskPayload::Completed { result } = done.task.payload else {
        panic!("expected completed, got {done:?}");
    };
    let result: rmcp::model::CallToolResult =
        serde_json::from_value(serde_json::Value::Object(result)).unwrap();
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.deployments().len(), 1);
}

both_eras!(
    deploy_names_deploy_production_for_any_spelling_of_production,
    deploy_production_runs_once_after_two_approvals_on_the_page,
    deploy_production_without_two_approvers_refuses_and_says_why,
    deploy_production_from_a_client_without_url_mode_fails_closed,
);

/// Over stdio the requester's client reads safe-ops' stderr, so the approvers' links must
/// never be logged: they reach the drop directory, and the log names only the channel.
#[test]
fn approver_links_never_reach_the_log_the_stdio_client_reads() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant;

    let dir = tempfile::tempdir().unwrap();
    drop(safe_ops::db::open(&dir.path().join("ops.db")).unwrap());
    let drop_dir = dir.path().join("links");
    std::fs::create_dir(&drop_dir).unwrap();
    std::fs::set_permissions(&drop_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut server = StdioServer::start_declaring(
        dir.path(),
        &[
            "--approver",
            "bob",
            "--approver",
            "carol",
            "--approver-drop",
            drop_dir.to_str().unwrap(),
        ],
        &[("GUARD_TENANT", "local"), ("GUARD_USER", "alice")],
        json!({"elicitation": {"form": {}, "url": {}}}),
    );
    server.send(json!({
        "jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "deploy_production", "arguments": {"service": "billing"}}
    }));
    let until = Instant::now() + Duration::from_secs(30);
    let asked = loop {
        let message = server.recv(until, "the URL elicitation");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    let requester_url = asked["params"]["url"].as_str().unwrap().to_owned();
    let mut links = Vec::new();
    while links.len() < 2 && Instant::now() < until {
        links = std::fs::read_dir(&drop_dir)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                (path.extension()? == "json").then_some(path)
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut urls = Vec::new();
    for path in &links {
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        urls.push(body["url"].as_str().unwrap().to_owned());
    }
    assert_eq!(urls.len(), 2, "one link each for bob and carol");
    server.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}));
    let answer = loop {
        let message = server.recv(until, "the call's answer");
        if message["id"] == 99 {
            break message;
        }
    };
    assert_eq!(answer["result"]["_meta"]["guard"]["outcome"], "declined");
    let log = server.stop();
    assert!(
        log.contains("file drop"),
        "the log names the channel: {log}"
    );
    for url in &urls {
        let token = url.rsplit('/').next().unwrap();
        assert!(!log.contains(token), "an approver's link reached the log");
    }
    assert_ne!(requester_url, urls[0]);
}

/// A pending approval outlives the server process: safe-ops is killed (SIGKILL, nothing
/// flushed on the way out) after one of two approvals, started again on the same store, key
/// and page address, and the second approver's link, delivered before the kill, completes
/// the approval; the requester's next call runs the deploy, once.
#[test]
fn a_pending_approval_survives_a_killed_server_process() {
    use std::time::Instant;

    let dir = tempfile::tempdir().unwrap();
    drop(safe_ops::db::open(&dir.path().join("ops.db")).unwrap());
    let drop_dir = dir.path().join("links");
    std::fs::create_dir(&drop_dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let args = [
        "--approver",
        "bob,carol",
        "--approver-drop",
        drop_dir.to_str().unwrap(),
        "--approval-addr",
        &addr,
    ];
    let env = [
        ("GUARD_TENANT", "local"),
        ("GUARD_USER", "alice"),
        (
            "GUARD_HMAC_KEY",
            "one key for the server before and after the restart, 32+ bytes",
        ),
    ];
    let capabilities = json!({"elicitation": {"form": {}, "url": {}}});
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let deploy = json!({
        "jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "deploy_production", "arguments": {"service": "billing"}}
    });

    let mut first = StdioServer::start_declaring(dir.path(), &args, &env, capabilities.clone());
    first.send(deploy.clone());
    let until = Instant::now() + Duration::from_secs(30);
    let asked = loop {
        let message = first.recv(until, "the URL elicitation");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    // The requester opens the page; the call waits for the approvers.
    first.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}));
    let mut links = Vec::new();
    while links.len() < 2 && Instant::now() < until {
        links = std::fs::read_dir(&drop_dir)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                let body: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
                Some((
                    body["approver"]["user"].as_str()?.to_owned(),
                    body["url"].as_str()?.to_owned(),
                ))
            })
            .collect();
        links.sort();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        links
            .iter()
            .map(|(who, _)| who.as_str())
            .collect::<Vec<_>>(),
        ["bob", "carol"],
        "{links:?}"
    );
    let page = runtime
        .block_on(visit::approve(&links[0].1, "billing"))
        .unwrap();
    assert!(page.text().contains("Approvals: 1 of 2"), "{}", page.text());

    // SIGKILL: no shutdown, no flush.
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while first.is_running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!first.is_running(), "the first process is gone");
    assert!(
        safe_ops::db::open(&dir.path().join("ops.db"))
            .unwrap()
            .query_row(
                "SELECT count(*) FROM deployments WHERE service = 'billing'",
                [],
                |r| r.get::<_, i64>(0)
            )
            .unwrap()
            == 0,
        "nothing deployed before the second approval"
    );

    let mut second = StdioServer::start_declaring(dir.path(), &args, &env, capabilities);
    // The page is back on its address; the link delivered before the kill still decides.
    let page = runtime
        .block_on(async {
            let mut tries = 0;
            loop {
                match visit::approve(&links[1].1, "billing").await {
                    Ok(page) => break Ok(page),
                    Err(error) if tries == 100 => break Err(error),
                    Err(_) => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        })
        .unwrap();
    assert!(page.text().contains("Approvals: 2 of 2"), "{}", page.text());
    // bob's link was used before the kill: it is spent after the restart too.
    let replay = runtime
        .block_on(visit::approve(&links[0].1, "billing"))
        .map(|page| page.text());
    assert!(replay.is_err(), "a spent link decided again: {replay:?}");

    // The requester calls again: the approval is taken up and the deploy runs once.
    second.send(deploy);
    let until = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let message = second.recv(until, "the call's answer");
        if message["method"] == "elicitation/create" {
            second.send(
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}}),
            );
            continue;
        }
        if message["id"] == 99 {
            break message;
        }
    };
    assert_eq!(
        answer["result"]["_meta"]["guard"]["outcome"], "executed",
        "{answer}"
    );
    let deployed: i64 = safe_ops::db::open(&dir.path().join("ops.db"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM deployments WHERE service = 'billing'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(deployed, 1, "the deploy ran once");
    drop(second.stop());
}
