//! The approval page's test bench: a server with two tools approved on the page, a real rmcp
//! client that receives the URL-mode elicitation (push on 2025-11-25, an input request on
//! 2026-07-28) and `notifications/elicitation/complete`, and headless Chromium (Debian's
//! `chromium` and `chromium-driver`, installed by `scripts/chromium.sh`) through chromedriver.
//!
//! The server counts the deploys its handler really ran: a page that says "approved" proves
//! nothing unless the effect ran exactly then, and never otherwise.

use std::{
    os::unix::process::CommandExt,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::{
    ClientHandler, RoleClient, RoleServer, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ClientCapabilities, ClientConfig, CustomNotification, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationCapability, ExtensionCapabilities, FormElicitationCapability,
        GetTaskParams, GetTaskResult, Implementation, InputResponses, ProtocolVersion,
        ServerCapabilities, ServerConfig, TASKS_EXTENSION_ID, UpdateTaskParams,
        UrlElicitationCapability,
    },
    service::{
        ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
    },
    tool, tool_handler,
};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::tool_router;
use rmcp_guard::{
    BearerIdentity, Boundary, Confirmed, Disclosed, Exposure, Guard, Guarded, IdentityProvider,
    Preview, ToolArgs, ToolError,
    approval::{ApprovalPage, ApproverLink, Notifier},
    audit::AuditLog,
    destructive,
    forms::{Checkbox, TypeToConfirm},
    identity::Identity,
    ops::{OperationStore, Operations, SqliteStore},
    read_only,
    undo::{Reversible, Window},
};
use rmcp_guard_test::testing::INPUT_KEY;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub const TOKEN: &str = "s3cret-deploy-token-4711";
pub const PUSH: ProtocolVersion = ProtocolVersion::V_2025_11_25;
pub const MRTR: ProtocolVersion = ProtocolVersion::V_2026_07_28;

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
struct DeployArgs {
    /// The environment to deploy to.
    environment: String,
}

#[derive(Clone)]
struct Ops {
    guard: Arc<Guard>,
    /// Advertises the Tasks extension and serves guard's tasks.
    tasks: bool,
    /// Every deploy the handler ran: environment, and the length of the secret it received.
    deployed: Arc<Mutex<Vec<(String, usize)>>>,
    /// The release a deploy would ship, as the preview shows it (a test may change it).
    release: Arc<Mutex<String>>,
}

impl Guarded for Ops {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

impl Ops {
    /// Counts an effect that needs no secret.
    fn ran(&self, what: String) {
        self.deployed.lock().unwrap().push((what, 0));
    }

    async fn preview(&self, args: &DeployArgs) -> Result<Preview, ToolError> {
        let release = self.release.lock().unwrap().clone();
        Ok(Preview::effect(
            args.environment.clone(),
            format!("Deploy release {release} to {}.", args.environment),
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
        self.ran(format!("restart {}", args.environment));
        Ok(format!("Restarted {}.", args.environment))
    }

    /// Retire a service; the requester approves alone on the page, and can undo it for ten
    /// minutes (with a store; without one it is final at once).
    #[destructive(
        approve = "url",
        confirm = "checkbox",
        preview = Self::preview,
        undo = Self::unretire,
        undo_within = "10m"
    )]
    #[tool]
    async fn retire(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Reversible<String, String> {
        self.ran(format!("retire {}", args.environment));
        Reversible::new(format!("Retired {}.", args.environment), args.environment)
    }

    /// Migrate an environment; the requester approves alone on the page, and it runs ten
    /// minutes later unless withdrawn.
    #[destructive(
        approve = "url",
        confirm = "checkbox",
        preview = Self::preview,
        defer = "10m"
    )]
    #[tool]
    async fn migrate(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.ran(format!("migrate {}", args.environment));
        Ok(format!("Migrated {}.", args.environment))
    }

    /// Show an environment's variables, which hold its deploy token; two people other than
    /// the requester approve on the page before anything is shown.
    #[read_only(
        discloses = "credentials",
        boundary = Self::variables,
        approve = "url",
        approvers = 2
    )]
    #[tool]
    async fn show_env(
        &self,
        Parameters(args): Parameters<DeployArgs>,
    ) -> Result<Disclosed<String>, ToolError> {
        self.ran(format!("show_env {}", args.environment));
        Ok(Disclosed::new(
            2,
            format!("RELEASE=2.4.1\nDEPLOY_TOKEN={TOKEN}"),
        ))
    }
}

impl Ops {
    /// What `show_env` would show, in plain words.
    async fn variables(&self, args: &DeployArgs) -> Result<Boundary, ToolError> {
        Ok(
            Boundary::new(format!("environment {}", args.environment), "the variables")
                .items(2, "variables"),
        )
    }
}

impl Ops {
    /// Brings a retired environment back (the bench counts it as an effect too).
    async fn unretire(&self, window: Window) -> Result<Value, ToolError> {
        let environment: String = window.data()?;
        self.ran(format!("unretire {environment}"));
        Ok(json!({ "restored": environment }))
    }
}

#[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router()))]
impl ServerHandler for Ops {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(if self.tasks {
            rmcp_guard::tasks::advertise(capabilities)
        } else {
            capabilities
        })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, rmcp::ErrorData> {
        rmcp_guard::tasks::get(self, request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        rmcp_guard::tasks::update(self, request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        rmcp_guard::tasks::cancel(self, request, context).await
    }
}

/// The person at the client, switchable mid-test: another user of the same server.
#[derive(Clone)]
struct Caller(Arc<Mutex<Identity>>);

impl IdentityProvider for Caller {
    fn identify(&self, _request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        Ok(self.0.lock().unwrap().clone())
    }
}

pub fn person(user: &str) -> Identity {
    Identity::new("acme", user, ["deploy"])
}

/// The client: declares URL elicitation (or not), hands each URL to the test, accepts.
#[derive(Clone)]
pub struct UrlClient {
    protocol: ProtocolVersion,
    url_mode: bool,
    /// Declares the Tasks extension.
    tasks: bool,
    urls: mpsc::UnboundedSender<(String, String, String)>,
    completed: Arc<Mutex<Vec<String>>>,
}

impl UrlClient {
    /// This client, declaring the Tasks extension.
    pub fn with_tasks(mut self) -> Self {
        self.tasks = true;
        self
    }
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
        if self.tasks {
            capabilities.extensions = Some(ExtensionCapabilities::from([(
                TASKS_EXTENSION_ID.to_owned(),
                Default::default(),
            )]));
        }
        ClientConfig::new(capabilities, Implementation::new("approval-test", "0.1.0"))
            .with_protocol_version(self.protocol.clone())
    }
}

/// How a bench is set up.
pub struct Setup {
    pub protocol: ProtocolVersion,
    pub url_mode: bool,
    pub timeout: Duration,
    /// The guard's key; a fresh random one if `None`.
    pub key: Option<Vec<u8>>,
    /// An operation store keeping used states (so states carry no boot epoch).
    pub store: Option<Arc<dyn OperationStore>>,
    /// Who asks (the identity provider's spelling).
    pub requester: Identity,
    /// Who may approve, as configured.
    pub approvers: Vec<Identity>,
    /// Where approver links go; `None` collects them for the test (`Harness::link`).
    pub notifier: Option<Box<dyn Notifier>>,
    /// Approvers must sign in with tokens this verifies.
    pub sign_in: Option<BearerIdentity>,
    /// The log the guard (and so the page) records in.
    pub audit: Option<AuditLog>,
    /// How long one MRTR round waits for the decision; guard's default if `None`.
    pub round_wait: Option<Duration>,
    /// The server advertises the Tasks extension and serves guard's tasks.
    pub server_tasks: bool,
    /// The client declares the Tasks extension.
    pub client_tasks: bool,
}

impl Setup {
    pub fn new(protocol: ProtocolVersion) -> Self {
        Self {
            protocol,
            url_mode: true,
            timeout: Duration::from_secs(120),
            key: None,
            store: None,
            requester: person("alice"),
            // The requester is listed too: she must never get a link to approve her own call.
            approvers: vec![
                person("alice"),
                person("bob"),
                person("carol"),
                Identity::new("other-tenant", "mallory", Vec::<String>::new()),
            ],
            notifier: None,
            sign_in: None,
            audit: None,
            round_wait: None,
            server_tasks: false,
            client_tasks: false,
        }
    }

    /// Starts the page, the server and the client.
    pub async fn start(self) -> Harness {
        let caller = Caller(Arc::new(Mutex::new(self.requester)));
        let links = Arc::new(Mutex::new(Vec::new()));
        let delivered = links.clone();
        let mut builder = ApprovalPage::builder(caller.clone());
        for approver in self.approvers {
            builder = builder.approver(approver);
        }
        builder = match self.notifier {
            Some(notifier) => builder.notify(notifier),
            None => builder.deliver_links(move |link| delivered.lock().unwrap().push(link)),
        };
        if let Some(verifier) = self.sign_in {
            builder = builder.sign_in_approvers(verifier);
        }
        let page = builder.start().await.unwrap();
        let base = page.base_url().to_string();
        let mut guard = match self.key {
            Some(key) => Guard::with_key(key),
            None => Guard::ephemeral(),
        }
        .unwrap();
        if let Some(store) = self.store {
            guard = guard.with_operations(Operations::new(store, caller.clone()));
        }
        if let Some(log) = self.audit {
            guard = guard.with_audit(log);
        }
        if let Some(wait) = self.round_wait {
            guard = guard.approval_round_wait(wait);
        }
        let guard = guard
            .answer_timeout(self.timeout)
            .with_exposure(Exposure::all_tools())
            .with_approval_page(page);
        let deployed = Arc::new(Mutex::new(Vec::new()));
        let guard = Arc::new(guard);
        let release = Arc::new(Mutex::new("2.4.1".to_owned()));
        let server = Ops {
            guard: guard.clone(),
            tasks: self.server_tasks,
            deployed: deployed.clone(),
            release: release.clone(),
        };
        let (tx, urls) = mpsc::unbounded_channel();
        let completed = Arc::new(Mutex::new(Vec::new()));
        let client = connect(
            server.clone(),
            UrlClient {
                protocol: self.protocol,
                url_mode: self.url_mode,
                tasks: self.client_tasks,
                urls: tx,
                completed: completed.clone(),
            },
        )
        .await;
        Harness {
            client: Arc::new(client),
            server,
            urls,
            completed,
            deployed,
            links,
            base,
            caller,
            guard,
            release,
        }
    }
}

pub struct Harness {
    pub client: Arc<RunningService<RoleClient, UrlClient>>,
    /// The server, for another client to connect to.
    server: Ops,
    urls: mpsc::UnboundedReceiver<(String, String, String)>,
    pub completed: Arc<Mutex<Vec<String>>>,
    deployed: Arc<Mutex<Vec<(String, usize)>>>,
    pub links: Arc<Mutex<Vec<ApproverLink>>>,
    pub base: String,
    caller: Caller,
    pub guard: Arc<Guard>,
    release: Arc<Mutex<String>>,
}

/// A SQLite store in a directory of its own.
pub fn sqlite() -> (Arc<dyn OperationStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
    (Arc::new(store), dir)
}

/// Carol completes the two-person approval at `link`, with the deploy token.
pub async fn carol_completes(link: &str) {
    let csrf = safe_ops::visit::get(link)
        .await
        .unwrap()
        .field("csrf")
        .unwrap();
    let page = safe_ops::visit::post(
        link,
        &[
            ("csrf", &csrf),
            ("decision", "approve"),
            ("typed", "production"),
            ("secret", TOKEN),
        ],
    )
    .await
    .unwrap();
    assert!(page.text().contains("Approved"), "{}", page.text());
}

/// A bench on protocol 2025-11-25.
pub async fn harness(url_mode: bool, timeout: Duration) -> Harness {
    Setup {
        url_mode,
        timeout,
        ..Setup::new(PUSH)
    }
    .start()
    .await
}

/// A client on `protocol` that declares URL elicitation if `url_mode`, and the channel the
/// URLs it is sent to arrive on: (url, elicitation id, message).
pub fn url_client(
    protocol: ProtocolVersion,
    url_mode: bool,
) -> (UrlClient, mpsc::UnboundedReceiver<(String, String, String)>) {
    let (urls, sent) = mpsc::unbounded_channel();
    let client = UrlClient {
        protocol,
        url_mode,
        tasks: false,
        urls,
        completed: Arc::default(),
    };
    (client, sent)
}

/// Serves `server` in process and connects `client` in its protocol's era.
pub async fn connect<S: ServerHandler>(
    server: S,
    client: UrlClient,
) -> RunningService<RoleClient, UrlClient> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    // From 2026-07-28 on there is no `initialize`: the client opens with `server/discover`.
    let lifecycle = if client.protocol.has_initialize() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![client.protocol.clone()],
        }
    };
    let protocol = client.protocol.clone();
    let running = client
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("client connects");
    assert_eq!(
        running.peer_info().map(|i| i.protocol_version.clone()),
        Some(protocol),
        "the session speaks the era under test"
    );
    running
}

/// A fresh PostgreSQL schema at `url` with guard's tables, for replicas to share: the store
/// (as the tables' owner), and the admin connection and schema name [`drop_pg`] takes.
pub async fn fresh_pg(
    url: &str,
    prefix: &str,
) -> (Arc<dyn OperationStore>, tokio_postgres::Client, String) {
    let schema = crate::support::orders::fresh_schema(prefix);
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let config = order_cancel::stores::pg_config(url, &schema, None).unwrap();
    let pg = rmcp_guard::ops::PgStore::from_config(config, 4).unwrap();
    pg.migrate().await.unwrap();
    (Arc::new(pg), admin, schema)
}

/// Drops the schema [`fresh_pg`] made. A server's background work (the sequencer, a purge)
/// may still be reading a table the drop already took, and PostgreSQL then breaks the
/// deadlock by refusing the drop: it is tried again, a few times.
pub async fn drop_pg(admin: tokio_postgres::Client, schema: &str) {
    let drop = format!("DROP SCHEMA {schema} CASCADE");
    for _ in 0..10 {
        match admin.batch_execute(&drop).await {
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            dropped => return dropped.unwrap(),
        }
    }
    panic!("{schema} could not be dropped: every try deadlocked with a server still using it");
}

/// What an MRTR round of a call approved on the page asked for.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The sealed `requestState` to echo.
    pub state: String,
    /// The URL-mode elicitation's URL, its id and its message.
    pub url: String,
    pub id: String,
    pub message: String,
}

impl Asked {
    /// The link's token: the same link on every replica, whatever base URL serves it.
    pub fn token(&self) -> &str {
        self.url.rsplit('/').next().unwrap()
    }
}

/// The round's one URL-mode input request under guard's key, or the final result.
pub fn asked(response: CallToolResponse) -> Result<Asked, Box<CallToolResult>> {
    let required = match response {
        CallToolResponse::Complete(result) => return Err(Box::new(result)),
        CallToolResponse::InputRequired(required) => required,
        other => panic!("expected a result or an input request, got {other:?}"),
    };
    let mut requests = required.input_requests.expect("input requests");
    assert_eq!(requests.len(), 1, "one input request");
    let Some(rmcp::model::InputRequest::Elicitation(request)) = requests.remove(INPUT_KEY) else {
        panic!("guard's input request is an elicitation under {INPUT_KEY}");
    };
    let ElicitRequestParams::UrlElicitationParams {
        message,
        url,
        elicitation_id,
        ..
    } = request.params
    else {
        panic!("a URL-mode elicitation");
    };
    Ok(Asked {
        state: required.request_state.expect("a sealed requestState"),
        url,
        id: elicitation_id,
        message,
    })
}

/// A retry of `tool` with `environment`, echoing `state` and answering `action`.
pub fn retry_params(
    tool: &str,
    environment: &str,
    state: &str,
    action: &str,
) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments(environment))
        .with_request_state(state)
        .with_input_responses(InputResponses::from([(
            INPUT_KEY.to_owned(),
            json!({"action": action}),
        )]))
}

pub fn arguments(environment: &str) -> rmcp::model::JsonObject {
    json!({"environment": environment})
        .as_object()
        .unwrap()
        .clone()
}

impl Harness {
    /// Starts `tool` in the background (driving MRTR rounds through the client's handler);
    /// the call ends when the page decides.
    pub fn call(&self, tool: &str, environment: &str) -> tokio::task::JoinHandle<CallToolResult> {
        let client = self.client.clone();
        let params =
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments(environment));
        tokio::spawn(async move { client.call_tool(params).await.expect("tools/call") })
    }

    /// One `tools/call` round, not driven: an MRTR first round, or a retry built by the test.
    pub async fn round(&self, params: CallToolRequestParams) -> CallToolResponse {
        self.client
            .call_tool_once(params)
            .await
            .expect("tools/call round")
    }

    /// A retry of `tool` with `environment`, echoing `state` and answering `action`, and
    /// every further round the server asks for (answered `accept`, as a client whose human
    /// went to the page does), until a final result.
    pub fn retry(
        &self,
        tool: &str,
        environment: &str,
        state: &str,
        action: &str,
    ) -> tokio::task::JoinHandle<CallToolResult> {
        let client = self.client.clone();
        let (tool, environment) = (tool.to_owned(), environment.to_owned());
        let (mut state, mut action) = (state.to_owned(), action.to_owned());
        tokio::spawn(async move {
            loop {
                match client
                    .call_tool_once(retry_params(&tool, &environment, &state, &action))
                    .await
                    .expect("tools/call retry")
                {
                    CallToolResponse::Complete(result) => return result,
                    CallToolResponse::InputRequired(more) => {
                        state = more.request_state.expect("a sealed requestState");
                        action = "accept".to_owned();
                    }
                    other => panic!("expected a result or another round, got {other:?}"),
                }
            }
        })
    }

    /// A call of `tool` without a state (a first round, or calling again), not driven.
    pub async fn fresh(&self, tool: &str, environment: &str) -> CallToolResponse {
        self.round(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments(environment)),
        )
        .await
    }

    /// One retry round of `tool`, not driven further.
    pub async fn retry_once(
        &self,
        tool: &str,
        environment: &str,
        state: &str,
        action: &str,
    ) -> CallToolResponse {
        self.round(retry_params(tool, environment, state, action))
            .await
    }

    /// The URL the client was sent to, and the elicitation id.
    pub async fn requester_url(&mut self) -> (String, String, String) {
        tokio::time::timeout(Duration::from_secs(30), self.urls.recv())
            .await
            .expect("the client receives a URL elicitation")
            .expect("the channel stays open")
    }

    /// The link delivered to `user` (deliveries run on their own tasks: waits briefly).
    pub fn link(&self, user: &str) -> String {
        for _ in 0..200 {
            if let Some(link) = self
                .links
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.approver.user == user)
            {
                return link.url.to_string();
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("no approver link for {user}")
    }

    pub fn deployed(&self) -> Vec<(String, usize)> {
        self.deployed.lock().unwrap().clone()
    }

    /// Connects `client` to the same server (same guard, same page, same effects).
    pub async fn connect_another(
        &self,
        client: UrlClient,
    ) -> RunningService<RoleClient, UrlClient> {
        connect(self.server.clone(), client).await
    }

    /// From now on the person at the client is `user` (same tenant, same scopes).
    pub fn as_user(&self, user: &str) {
        self.as_identity(person(user));
    }

    /// From now on the person at the client is `identity`.
    pub fn as_identity(&self, identity: Identity) {
        *self.caller.0.lock().unwrap() = identity;
    }

    /// From now on a deploy would ship `release`: what the preview shows changes.
    pub fn set_release(&self, release: &str) {
        *self.release.lock().unwrap() = release.to_owned();
    }
}

/// Bob approves on the page, then Carol rejects there; the page says who rejected.
pub async fn bob_approves_then_carol_rejects(h: &Harness) {
    let browser = Browser::start().await;
    browser.approve(&h.link("bob"), "production", None).await;
    browser.open(&h.link("carol")).await;
    let page = browser.click("#reject").await;
    assert!(page.contains("Rejected by carol"), "{page}");
}

/// The call ended as Carol's rejection: a natural outcome, not an error, and nothing ran.
pub fn assert_rejected_by_carol(h: &Harness, result: &CallToolResult) {
    assert_eq!(outcome(result), Some(Outcome::Rejected), "{result:?}");
    assert!(
        !result.is_error.unwrap_or(false),
        "a rejection is an outcome, not an error"
    );
    assert!(
        text(result).contains("carol rejected deploy on the approval page; nothing was changed"),
        "{}",
        text(result)
    );
    assert!(h.deployed().is_empty(), "nothing ran");
}

/// chromedriver on a free port and a headless Chromium session through it.
pub struct Browser {
    pub client: Client,
    driver: Child,
}

impl Browser {
    pub async fn start() -> Self {
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
        // A process group of its own, so dropping the browser ends Chromium too (killing
        // chromedriver alone would leave its Chromium processes running).
        let driver = Command::new("chromedriver")
            .process_group(0)
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

    pub async fn open(&self, url: &str) -> String {
        self.client.goto(url).await.unwrap();
        self.body().await
    }

    pub async fn body(&self) -> String {
        self.client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Clicks `css` and waits for the page the click loads.
    pub async fn click(&self, css: &str) -> String {
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
    pub async fn next_page(&self, before: fantoccini::elements::Element) -> String {
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
    pub async fn wait_for(&self, needle: &str) -> String {
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

    pub async fn has(&self, css: &str) -> bool {
        !self
            .client
            .find_all(Locator::Css(css))
            .await
            .unwrap()
            .is_empty()
    }

    pub async fn value(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .attr("value")
            .await
            .unwrap()
            .unwrap_or_default()
    }

    pub async fn approve(&self, url: &str, typed: &str, secret: Option<&str>) -> String {
        self.open(url).await;
        self.fill("#typed", typed).await;
        if let Some(secret) = secret {
            self.fill("#secret", secret).await;
        }
        self.click("#approve").await
    }

    /// Signs in on the page at `url` with `token`, and returns the page that answers.
    pub async fn sign_in(&self, url: &str, token: &str) -> String {
        self.open(url).await;
        self.fill("#token", token).await;
        self.click("#sign-in-button").await
    }

    /// Types `text` into the field `css`.
    async fn fill(&self, css: &str, text: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .send_keys(text)
            .await
            .unwrap();
    }

    /// Posts a decision from the page's own origin with a form the page does not offer, as a
    /// person tampering with the page would.
    pub async fn post_from_page(&self, url: &str, fields: &[(&str, &str)]) -> String {
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

    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The outcome guard's `_meta.guard` tag names, if any.
pub fn outcome(result: &CallToolResult) -> Option<Outcome> {
    Outcome::of(result)
}
