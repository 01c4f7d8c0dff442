//! The approval page, driven in headless Chromium (Debian's `chromium` and `chromium-driver`,
//! installed by `scripts/chromium.sh`) together with a real rmcp client that receives the
//! URL-mode elicitation and `notifications/elicitation/complete`.
//!
//! Each test counts the deploys the handler really ran: a page that says "approved" proves
//! nothing unless the effect ran exactly then, and never otherwise.

use std::{
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::{
    ClientHandler, RoleClient, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
        UrlElicitationCapability,
    },
    service::{NotificationContext, RequestContext, RunningService},
    tool, tool_handler, tool_router,
};
use rmcp_guard::{
    Confirmed, EnvIdentity, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError,
    approval::{ApprovalPage, ApproverLink},
    destructive,
    forms::{Checkbox, TypeToConfirm},
    identity::Identity,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const TOKEN: &str = "s3cret-deploy-token-4711";

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
struct DeployArgs {
    /// The environment to deploy to.
    environment: String,
}

#[derive(Clone)]
struct Ops {
    guard: Arc<Guard>,
    /// Every deploy the handler ran: environment, and the length of the secret it received.
    deployed: Arc<Mutex<Vec<(String, usize)>>>,
}

impl Guarded for Ops {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

impl Ops {
    async fn preview(&self, args: &DeployArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            args.environment.clone(),
            format!("Deploy release 2.4.1 to {}.", args.environment),
        ))
    }
}

#[tool_router]
impl Ops {
    /// Deploy to an environment; two people other than the requester approve on the page.
    #[destructive(
        approve = "url",
        approvers = 2,
        confirm = "type_to_confirm",
        target = environment,
        secret = "Deploy token",
        preview = Self::preview
    )]
    #[tool]
    async fn deploy(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        let secret = confirmed.secret().map_or(0, |s| s.expose().len());
        self.deployed
            .lock()
            .unwrap()
            .push((args.environment.clone(), secret));
        Ok(format!(
            "Deployed release 2.4.1 to {} ({:?}).",
            args.environment,
            confirmed.secret()
        ))
    }

    /// Restart a service; the requester approves alone on the page.
    #[destructive(approve = "url", confirm = "checkbox", preview = Self::preview)]
    #[tool]
    async fn restart(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.deployed
            .lock()
            .unwrap()
            .push((format!("restart {}", args.environment), 0));
        Ok(format!("Restarted {}.", args.environment))
    }
}

#[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router()))]
impl ServerHandler for Ops {}

/// The client: declares URL elicitation (or not), hands each URL to the test, accepts.
#[derive(Clone)]
struct UrlClient {
    url_mode: bool,
    urls: mpsc::UnboundedSender<(String, String, String)>,
    completed: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for UrlClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        match request {
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                let _ = self.urls.send((url, elicitation_id, message));
                Ok(ElicitResult::new(ElicitationAction::Accept))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            let id = notification
                .params
                .as_ref()
                .and_then(|p| p.get("elicitationId"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.completed.lock().unwrap().push(id);
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        if self.url_mode {
            elicitation.url = Some(UrlElicitationCapability::new());
        }
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, Implementation::new("approval-test", "0.1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

struct Harness {
    client: Arc<RunningService<RoleClient, UrlClient>>,
    urls: mpsc::UnboundedReceiver<(String, String, String)>,
    completed: Arc<Mutex<Vec<String>>>,
    deployed: Arc<Mutex<Vec<(String, usize)>>>,
    links: Arc<Mutex<Vec<ApproverLink>>>,
    base: String,
}

async fn harness(url_mode: bool, timeout: Duration) -> Harness {
    let identity = EnvIdentity::from_lookup(|name| match name {
        "GUARD_TENANT" => Some("acme"),
        "GUARD_USER" => Some("alice"),
        "GUARD_SCOPES" => Some("deploy"),
        _ => None,
    })
    .unwrap();
    let links = Arc::new(Mutex::new(Vec::new()));
    let delivered = links.clone();
    let person = |user: &str| Identity::new("acme", user, Vec::<String>::new());
    let page = ApprovalPage::builder(identity)
        // The requester is listed too: she must never get a link to approve her own call.
        .approver(person("alice"))
        .approver(person("bob"))
        .approver(person("carol"))
        .approver(Identity::new(
            "other-tenant",
            "mallory",
            Vec::<String>::new(),
        ))
        .deliver_links(move |link| delivered.lock().unwrap().push(link))
        .start()
        .await
        .unwrap();
    let base = page.base_url().to_string();
    let guard = Guard::ephemeral()
        .unwrap()
        .answer_timeout(timeout)
        .with_exposure(Exposure::all_tools())
        .with_approval_page(page);
    let deployed = Arc::new(Mutex::new(Vec::new()));
    let server = Ops {
        guard: Arc::new(guard),
        deployed: deployed.clone(),
    };
    let (tx, urls) = mpsc::unbounded_channel();
    let completed = Arc::new(Mutex::new(Vec::new()));
    let client = connect(
        server,
        UrlClient {
            url_mode,
            urls: tx,
            completed: completed.clone(),
        },
    )
    .await;
    Harness {
        client: Arc::new(client),
        urls,
        completed,
        deployed,
        links,
        base,
    }
}

async fn connect<S: ServerHandler>(
    server: S,
    client: UrlClient,
) -> RunningService<RoleClient, UrlClient> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client.serve(client_io).await.expect("client connects")
}

impl Harness {
    /// Starts `tool` in the background; the call ends when the page decides.
    fn call(&self, tool: &str, environment: &str) -> tokio::task::JoinHandle<CallToolResult> {
        let client = self.client.clone();
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(
            json!({"environment": environment})
                .as_object()
                .unwrap()
                .clone(),
        );
        tokio::spawn(async move { client.call_tool(params).await.expect("tools/call") })
    }

    /// The URL the client was sent to, and the elicitation id.
    async fn requester_url(&mut self) -> (String, String, String) {
        tokio::time::timeout(Duration::from_secs(30), self.urls.recv())
            .await
            .expect("the client receives a URL elicitation")
            .expect("the channel stays open")
    }

    fn link(&self, user: &str) -> String {
        self.links
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.approver.user == user)
            .unwrap_or_else(|| panic!("no approver link for {user}"))
            .url
            .to_string()
    }

    fn deployed(&self) -> Vec<(String, usize)> {
        self.deployed.lock().unwrap().clone()
    }
}

/// chromedriver on a free port and a headless Chromium session through it.
struct Browser {
    client: Client,
    driver: Child,
}

impl Browser {
    async fn start() -> Self {
        let status = Command::new("bash")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../scripts/chromium.sh"
            ))
            .status()
            .expect("scripts/chromium.sh runs");
        assert!(
            status.success(),
            "scripts/chromium.sh could not install chromium and chromium-driver"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=900,900"]}),
        );
        let mut last = None;
        for _ in 0..100 {
            match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => return Self { client, driver },
                Err(error) => last = Some(error),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("cannot reach chromedriver: {last:?}");
    }

    async fn open(&self, url: &str) -> String {
        self.client.goto(url).await.unwrap();
        self.body().await
    }

    async fn body(&self) -> String {
        self.client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Clicks `css` and waits for the page the click loads.
    async fn click(&self, css: &str) -> String {
        let before = self.client.find(Locator::Css("body")).await.unwrap();
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        self.next_page(before).await
    }

    /// Waits until `before` is replaced by a newly loaded page, and returns its text.
    async fn next_page(&self, before: fantoccini::elements::Element) -> String {
        for _ in 0..200 {
            if let Ok(now) = self.client.find(Locator::Css("body")).await
                && now.element_id() != before.element_id()
                && let Ok(text) = now.text().await
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no new page loaded");
    }

    /// Waits until the page's text contains `needle` (a page that submits itself loads twice).
    async fn wait_for(&self, needle: &str) -> String {
        let mut last = String::new();
        for _ in 0..200 {
            if let Ok(body) = self.client.find(Locator::Css("body")).await
                && let Ok(text) = body.text().await
            {
                if text.contains(needle) {
                    return text;
                }
                last = text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the page never said {needle:?}; it says {last:?}");
    }

    async fn has(&self, css: &str) -> bool {
        !self
            .client
            .find_all(Locator::Css(css))
            .await
            .unwrap()
            .is_empty()
    }

    async fn value(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .attr("value")
            .await
            .unwrap()
            .unwrap_or_default()
    }

    async fn approve(&self, url: &str, typed: &str, secret: Option<&str>) -> String {
        self.open(url).await;
        self.client
            .find(Locator::Css("#typed"))
            .await
            .unwrap()
            .send_keys(typed)
            .await
            .unwrap();
        if let Some(secret) = secret {
            self.client
                .find(Locator::Css("#secret"))
                .await
                .unwrap()
                .send_keys(secret)
                .await
                .unwrap();
        }
        self.click("#approve").await
    }

    /// Posts a decision from the page's own origin with a form the page does not offer, as a
    /// person tampering with the page would.
    async fn post_from_page(&self, url: &str, fields: &[(&str, &str)]) -> String {
        self.open(url).await;
        let fields: Vec<Value> = fields.iter().map(|(k, v)| json!([k, v])).collect();
        let before = self.client.find(Locator::Css("body")).await.unwrap();
        self.client
            .execute(
                "const f = document.createElement('form'); f.method = 'post'; f.action = location.href;
                 for (const [k, v] of arguments[0]) { const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
                 document.body.appendChild(f); f.submit();",
                vec![Value::Array(fields)],
            )
            .await
            .unwrap();
        self.next_page(before).await
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn outcome(result: &CallToolResult) -> String {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("guard"))
        .and_then(|g| g.get("outcome"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_other_people_approve_then_the_deploy_runs_once_with_the_secret() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    let (url, elicitation_id, message) = h.requester_url().await;
    assert!(url.starts_with(&h.base), "{url} is on the page {}", h.base);
    assert!(
        message.contains("Deploy release 2.4.1 to production."),
        "{message}"
    );
    assert!(message.contains("2 people other than you"), "{message}");
    // The requester is never an approver, and another tenant's user gets no link.
    let users: Vec<String> = h
        .links
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.approver.user.clone())
        .collect();
    assert_eq!(users, ["bob", "carol"]);

    let browser = Browser::start().await;
    let page = browser.open(&url).await;
    assert!(page.contains("Approve deploy?"), "{page}");
    assert!(
        page.contains("Deploy release 2.4.1 to production."),
        "{page}"
    );
    assert!(
        page.contains("Requested by\nalice (acme)") || page.contains("alice (acme)"),
        "{page}"
    );
    assert!(page.contains("Expires"), "{page}");
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(
        !browser.has("#approve").await,
        "the requester's page offers no approval"
    );

    let page = browser.approve(&h.link("bob"), "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(page.contains("bob at"), "{page}");
    assert!(h.deployed().is_empty(), "one approval runs nothing");
    // The requester's page shows who approved so far.
    let page = browser.open(&url).await;
    assert!(
        page.contains("Approvals: 1 of 2") && page.contains("bob at"),
        "{page}"
    );
    browser.open(&h.link("carol")).await;
    assert!(
        browser.has("#secret").await,
        "the completing approval asks for the secret"
    );
    browser.screenshot("approval-pending.png").await;

    let page = browser
        .approve(&h.link("carol"), "production", Some(TOKEN))
        .await;
    assert!(page.contains("Approved: the action runs now."), "{page}");
    assert!(page.contains("Approvals: 2 of 2"), "{page}");
    browser.screenshot("approval-approved.png").await;

    let result = call.await.unwrap();
    assert_eq!(outcome(&result), "executed", "{result:?}");
    assert_eq!(h.deployed(), [("production".to_owned(), TOKEN.len())]);
    let shown = text(&result);
    assert!(
        shown.contains("Deployed release 2.4.1 to production"),
        "{shown}"
    );
    assert!(
        !shown.contains(TOKEN),
        "the secret never reaches the model: {shown}"
    );
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(!format!("{result:?}").contains(TOKEN));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*h.completed.lock().unwrap(), [elicitation_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_approval_by_the_same_person_and_a_replayed_link_are_refused() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    let (url, _, _) = h.requester_url().await;
    let browser = Browser::start().await;
    let bob = h.link("bob");
    browser.open(&bob).await;
    let csrf = browser.value("input[name=csrf]").await;
    // A typed name that is not the target, or hides an invisible character, counts for nothing.
    for typed in ["Production", "produc\u{200b}tion", "staging"] {
        let page = browser.approve(&bob, typed, None).await;
        assert!(page.contains("Not approved: the typed name"), "{page}");
        assert!(page.contains("Approvals: 0 of 2"), "{page}");
    }
    let page = browser.approve(&bob, "production", None).await;
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(
        !browser.has("#approve").await,
        "a used link offers no second approval"
    );
    let fields = [
        ("csrf", csrf.as_str()),
        ("decision", "approve"),
        ("typed", "production"),
        ("secret", TOKEN),
    ];
    let page = browser.post_from_page(&bob, &fields).await;
    assert!(page.contains("already used"), "{page}");
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    // The requester, tampering with her own page, cannot add the second approval.
    browser.open(&url).await;
    let own = browser.value("input[name=csrf]").await;
    let fields = [
        ("csrf", own.as_str()),
        ("decision", "approve"),
        ("typed", "production"),
        ("secret", TOKEN),
    ];
    let page = browser.post_from_page(&url, &fields).await;
    assert!(
        page.contains("You asked for this action, so you cannot approve it"),
        "{page}"
    );
    assert!(page.contains("Approvals: 1 of 2"), "{page}");
    assert!(h.deployed().is_empty());
    // The requester may withdraw.
    browser.open(&url).await;
    browser.click("#reject").await;
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), "rejected", "{result:?}");
    assert!(
        text(&result).contains("alice rejected deploy"),
        "{}",
        text(&result)
    );
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_ends_the_call_and_the_links_decide_nothing_more() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let browser = Browser::start().await;
    browser.approve(&h.link("bob"), "production", None).await;
    browser.open(&h.link("carol")).await;
    let page = browser.click("#reject").await;
    assert!(page.contains("Rejected by carol"), "{page}");
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), "rejected", "{result:?}");
    assert!(
        !result.is_error.unwrap_or(false),
        "a rejection is an outcome, not an error"
    );
    assert!(
        text(&result).contains("carol rejected deploy on the approval page; nothing was changed")
    );
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approval_then_the_deadline_runs_nothing() {
    let mut h = harness(true, Duration::from_secs(3)).await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let browser = Browser::start().await;
    let carol = h.link("carol");
    browser.approve(&h.link("bob"), "production", None).await;
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), "expired", "{result:?}");
    assert!(
        h.deployed().is_empty(),
        "nothing runs without two approvals"
    );
    let page = browser.open(&carol).await;
    assert!(page.contains("Expired: nothing will be changed."), "{page}");
    assert!(!browser.has("#approve").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_links_decisions_by_get_and_cross_site_posts_are_refused() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("deploy", "production");
    h.requester_url().await;
    let browser = Browser::start().await;
    let bob = h.link("bob");

    // A forged link: the right shape, never issued.
    let forged = format!("{}approval/{}", h.base, "ab".repeat(32));
    let page = browser.open(&forged).await;
    assert!(page.contains("This approval link is not valid"), "{page}");

    // A decision by GET: the query is ignored, nothing is decided.
    browser.open(&bob).await;
    let csrf = browser.value("input[name=csrf]").await;
    let page = browser
        .open(&format!(
            "{bob}?csrf={csrf}&decision=approve&typed=production"
        ))
        .await;
    assert!(page.contains("Approvals: 0 of 2"), "{page}");

    // The page refuses to be framed and loads nothing from elsewhere.
    let headers = raw_get(&bob).await;
    for expected in [
        "x-frame-options: DENY",
        "content-security-policy: default-src 'none'; style-src 'self'",
        "referrer-policy: same-origin",
        "cache-control: no-store",
    ] {
        assert!(
            headers.contains(expected),
            "missing {expected} in {headers}"
        );
    }

    // A cross-site POST carrying even the right CSRF token: refused by its origin.
    let attacker = attacker_site(&bob, &csrf).await;
    browser
        .client
        .goto(&format!("http://{attacker}/"))
        .await
        .unwrap();
    let page = browser
        .wait_for("did not come from the approval page")
        .await;
    assert!(
        page.contains("did not come from the approval page"),
        "{page}"
    );
    let page = browser.open(&bob).await;
    assert!(page.contains("Approvals: 0 of 2"), "{page}");
    assert!(browser.has("#approve").await, "the link is still unused");

    // A forged CSRF token from the page's own origin: refused.
    let page = browser
        .post_from_page(
            &bob,
            &[
                ("csrf", "0000"),
                ("decision", "approve"),
                ("typed", "production"),
            ],
        )
        .await;
    assert!(
        page.contains("did not come from the approval page"),
        "{page}"
    );
    assert!(h.deployed().is_empty());

    browser.open(&bob).await;
    browser.click("#reject").await;
    assert_eq!(outcome(&call.await.unwrap()), "rejected");
    assert!(h.deployed().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_approval_the_requester_approves_a_checkbox_tool_alone() {
    let mut h = harness(true, Duration::from_secs(120)).await;
    let call = h.call("restart", "web");
    let (url, elicitation_id, _) = h.requester_url().await;
    assert!(
        h.links.lock().unwrap().is_empty(),
        "one approval needs no other approver"
    );
    let browser = Browser::start().await;
    browser.open(&url).await;
    assert!(
        !browser.has("#typed").await,
        "a checkbox tool asks for no typed name"
    );
    let page = browser.click("#approve").await;
    assert!(page.contains("Approved: the action runs now."), "{page}");
    let result = call.await.unwrap();
    assert_eq!(outcome(&result), "executed", "{result:?}");
    assert_eq!(h.deployed(), [("restart web".to_owned(), 0)]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*h.completed.lock().unwrap(), [elicitation_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_url_elicitation_gets_the_natural_fail_closed_answer() {
    let h = harness(false, Duration::from_secs(120)).await;
    let result = h.call("deploy", "production").await.unwrap();
    assert_eq!(outcome(&result), "unsupported_client", "{result:?}");
    assert!(!result.is_error.unwrap_or(false));
    assert!(
        text(&result).contains("did not declare URL elicitation"),
        "{}",
        text(&result)
    );
    assert!(h.links.lock().unwrap().is_empty(), "no approval was opened");
    assert!(h.deployed().is_empty());
}

/// The response head of a plain GET, lowercased names.
async fn raw_get(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url::Url::parse(url).unwrap();
    let addr: SocketAddr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
        .parse()
        .unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "GET {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n",
                url.path()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out.split("\r\n\r\n").next().unwrap_or_default().to_owned()
}

/// Another origin (another port) serving a page that posts an approval to `target` as soon
/// as it loads.
async fn attacker_site(target: &str, csrf: &str) -> SocketAddr {
    let html = format!(
        "<!doctype html><form id=f method=post action=\"{target}\"><input name=csrf value=\"{csrf}\"><input name=decision value=approve><input name=typed value=production></form><script>document.getElementById('f').submit()</script>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
