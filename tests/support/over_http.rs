//! Servers over streamable HTTP, as rmcp serves them (on 2026-07-28 a service built per
//! request), on a Unix socket so no port is shared with other tests, and rmcp clients that
//! reach them; and callers named by their `Authorization` header over HTTP, by a name the
//! test sets in process.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use rmcp::{
    ClientHandler, RoleClient, RoleServer, ServiceExt,
    service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use rmcp_guard::{IdentityProvider, ToolError, identity::Identity};
use tempfile::TempDir;

/// A server listening for streamable HTTP at `http://localhost/mcp` on a Unix socket.
pub struct HttpServer {
    _dir: TempDir,
    socket: PathBuf,
}

/// Serves `server` over streamable HTTP (rmcp's defaults, loopback hosts only); each
/// service rmcp builds is a clone of `server`, sharing its `Guard`.
pub async fn serve_http<S>(server: S) -> HttpServer
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    super::events::install();
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("mcp.sock");
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::UnixListener::bind(&socket).expect("the socket binds");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    HttpServer { _dir: dir, socket }
}

impl HttpServer {
    /// `human` as a new client of this server, speaking `human`'s era, sending
    /// `Authorization: Bearer <bearer>` when given.
    pub async fn connect<H: ClientHandler>(
        &self,
        human: H,
        bearer: Option<&str>,
    ) -> RunningService<RoleClient, H> {
        let mut config = StreamableHttpClientTransportConfig::with_uri("http://localhost/mcp");
        config.auth_header = bearer.map(str::to_owned);
        let socket = self.socket.to_str().expect("a UTF-8 socket path");
        let transport = StreamableHttpClientTransport::from_unix_socket_with_config(socket, config);
        let protocol = human.get_info().protocol_version;
        let client = if protocol.has_initialize() {
            human.serve(transport).await
        } else {
            human
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![protocol.clone()],
                    },
                )
                .await
        }
        .expect("client connects over HTTP");
        let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
        assert_eq!(
            negotiated,
            Some(protocol),
            "the client speaks the era under test"
        );
        client
    }
}

/// Callers of tenant `acme`: over HTTP the name an `Authorization: Bearer <name>` header
/// carries (standing in for a verified token's subject), in process the name last set.
#[derive(Clone)]
pub struct Callers(Arc<Mutex<String>>);

impl Callers {
    /// Callers named `user` in process until [`Callers::now`] names another.
    pub fn new(user: &str) -> Self {
        Callers(Arc::new(Mutex::new(user.to_owned())))
    }

    /// From now on the in-process caller is `user`, spelled exactly so.
    pub fn now(&self, user: &str) {
        *self.0.lock().unwrap() = user.to_owned();
    }
}

impl IdentityProvider for Callers {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        let user = match request.extensions.get::<http::request::Parts>() {
            Some(parts) => parts
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or_else(|| {
                    ToolError::new(rmcp_guard::Code::PermissionDenied, "no caller named")
                })?
                .to_owned(),
            None => self.0.lock().unwrap().clone(),
        };
        Ok(Identity::new("acme", user, Vec::<String>::new()))
    }
}
