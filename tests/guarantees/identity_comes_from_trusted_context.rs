//! Identity from trusted context: the environment provider for stdio, the verified bearer
//! token for streamable HTTP (signature, issuer, audience, expiry, not-before), and scope
//! checks whose denials are audited.

use crate::support;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::{
    RoleServer, ServiceExt,
    service::RequestContext,
    tool,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    BearerIdentity, Code, EnvIdentity, Identity, IdentityProvider, ToolError, require_scopes,
};
use rmcp_guard_test::testing::ScriptedHuman;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing_subscriber::Layer;

const ISSUER: &str = "https://login.example.test";
const AUDIENCE: &str = "https://orders.example.test/mcp";
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-test-only";
const RS256_PRIVATE: &[u8] = include_bytes!("../fixtures/identity/rs256_private.pem");
const RS256_PUBLIC: &[u8] = include_bytes!("../fixtures/identity/rs256_public.pem");
const RS256_OTHER_PRIVATE: &[u8] = include_bytes!("../fixtures/identity/rs256_other_private.pem");
const ES256_PRIVATE: &[u8] = include_bytes!("../fixtures/identity/es256_private.pem");
const ES256_PUBLIC: &[u8] = include_bytes!("../fixtures/identity/es256_public.pem");

// ---------------------------------------------------------------------------------------
// Captured tracing events (of every thread: the HTTP tests' servers log from their own
// tasks; tests find their own events by trace id or by a tenant unique to the test).

#[derive(Debug, Clone)]
struct Captured {
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    fn all_text(&self) -> String {
        self.fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct CaptureLayer(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
}

fn events() -> Vec<Captured> {
    static EVENTS: OnceLock<Arc<Mutex<Vec<Captured>>>> = OnceLock::new();
    let store = EVENTS.get_or_init(|| {
        let store = Arc::new(Mutex::new(Vec::new()));
        support::events::capture_every_thread(CaptureLayer(store.clone()));
        store
    });
    store.lock().unwrap().clone()
}

/// Installs the capturing subscriber before the code under test logs anything.
fn capture() {
    let _ = events();
}

/// The trace id a refusal quotes: `... (trace_id <id>).`
fn trace_id_of(message: &str) -> String {
    let start = message
        .find("trace_id ")
        .unwrap_or_else(|| panic!("no trace_id in {message:?}"))
        + "trace_id ".len();
    message[start..]
        .split(|c: char| c == ')' || c.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

fn events_with_trace(trace_id: &str) -> Vec<Captured> {
    events()
        .into_iter()
        .filter(|e| e.field("trace_id") == Some(trace_id))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Tokens minted in the test.

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(tenant: &str, user: &str) -> Value {
    json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": user,
        "tenant": tenant,
        "iat": now(),
        "exp": now() + 600,
        "scope": "orders:read orders:cancel",
    })
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn without(mut claims: Value, key: &str) -> Value {
    claims.as_object_mut().unwrap().remove(key);
    claims
}

fn hs256(claims: &Value) -> String {
    hs256_with(SECRET, claims)
}

fn hs256_with(secret: &[u8], claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret).unwrap(),
    )
    .unwrap()
}

fn rs256(private_pem: &[u8], claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        claims,
        &EncodingKey::from_rsa_pem(private_pem).unwrap(),
    )
    .unwrap()
}

fn es256(claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::ES256),
        claims,
        &EncodingKey::from_ec_pem(ES256_PRIVATE).unwrap(),
    )
    .unwrap()
}

fn hs_provider() -> BearerIdentity {
    BearerIdentity::hs256(SECRET, ISSUER, AUDIENCE).unwrap()
}

fn headers(authorization: &str) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_str(authorization).unwrap(),
    );
    headers
}

fn bearer(token: &str) -> http::HeaderMap {
    headers(&format!("Bearer {token}"))
}

fn scopes(identity: &Identity) -> Vec<&str> {
    identity.scopes.iter().map(String::as_str).collect()
}

/// The refusal is PERMISSION_DENIED, tells the client what to send, quotes a trace id, and
/// neither it nor any logged event under that trace id contains the token or its parts.
fn assert_denied(result: Result<Identity, ToolError>, token: &str, reason: &str) -> String {
    let error = match result {
        Ok(identity) => panic!("expected a refusal ({reason}), got {identity:?}"),
        Err(error) => error,
    };
    assert_eq!(error.code(), Code::PermissionDenied, "{error}");
    let message = error.message();
    assert!(
        message.contains("Bearer") || message.contains("access token"),
        "{message}"
    );
    for part in std::iter::once(token).chain(token.split('.')) {
        if part.len() >= 8 {
            assert!(
                !message.contains(part),
                "the refusal echoes the token: {message}"
            );
        }
    }
    let trace_id = trace_id_of(message);
    let logged = events_with_trace(&trace_id);
    let warning = logged
        .iter()
        .find(|e| e.level == tracing::Level::WARN)
        .unwrap_or_else(|| panic!("no warning logged for trace_id {trace_id}: {logged:?}"));
    assert_eq!(warning.field("reason"), Some(reason), "{warning:?}");
    for event in &logged {
        let text = event.all_text();
        for part in std::iter::once(token).chain(token.split('.')) {
            if part.len() >= 8 {
                assert!(!text.contains(part), "the log carries the token: {text}");
            }
        }
    }
    message.to_owned()
}

// ---------------------------------------------------------------------------------------
// EnvIdentity

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn env_identity_reads_tenant_user_and_scopes_separated_by_spaces_or_commas() {
    let env = EnvIdentity::from_lookup(lookup(&[
        ("GUARD_TENANT", "tenant_demo"),
        ("GUARD_USER", "user_demo"),
        (
            "GUARD_SCOPES",
            "order.read, order.cancel.request  audit:read,",
        ),
    ]))
    .unwrap();
    assert_eq!(env.identity().tenant, "tenant_demo");
    assert_eq!(env.identity().user, "user_demo");
    assert_eq!(
        scopes(env.identity()),
        ["audit:read", "order.cancel.request", "order.read"]
    );

    let no_scopes = EnvIdentity::from_lookup(lookup(&[
        ("GUARD_TENANT", "t"),
        ("GUARD_USER", "u"),
        ("GUARD_SCOPES", ""),
    ]))
    .unwrap();
    assert!(no_scopes.identity().scopes.is_empty());
}

#[test]
fn env_identity_names_each_missing_or_empty_variable() {
    let all = [
        ("GUARD_TENANT", "tenant_demo"),
        ("GUARD_USER", "user_demo"),
        ("GUARD_SCOPES", "order.read"),
    ];
    for missing in ["GUARD_TENANT", "GUARD_USER", "GUARD_SCOPES"] {
        let vars: Vec<_> = all.iter().copied().filter(|(k, _)| *k != missing).collect();
        let error = EnvIdentity::from_lookup(lookup(&vars)).unwrap_err();
        assert!(
            error.starts_with(&format!("{missing} is not set")),
            "{missing}: {error}"
        );
    }
    for empty in ["GUARD_TENANT", "GUARD_USER"] {
        let vars: Vec<_> = all
            .iter()
            .map(|&(k, v)| if k == empty { (k, "  ") } else { (k, v) })
            .collect();
        let error = EnvIdentity::from_lookup(lookup(&vars)).unwrap_err();
        assert!(error.starts_with(&format!("{empty} is empty")), "{error}");
    }
}

#[test]
fn env_identity_refuses_invisible_and_mixed_script_names_at_start_up() {
    for (name, user, says) in [
        ("GUARD_USER", "carol\u{200b}", "U+200B"),
        ("GUARD_USER", "\u{441}\u{430}rol", "Cyrillic and Latin"),
        ("GUARD_TENANT", "ac\u{202e}me", "U+202E"),
    ] {
        let vars = [
            (
                "GUARD_TENANT",
                if name == "GUARD_TENANT" { user } else { "acme" },
            ),
            (
                "GUARD_USER",
                if name == "GUARD_USER" { user } else { "carol" },
            ),
            ("GUARD_SCOPES", ""),
        ];
        let error = EnvIdentity::from_lookup(lookup(&vars)).unwrap_err();
        assert!(
            error.starts_with(&format!("{name}: ")) && error.contains(says),
            "{user:?}: {error}"
        );
    }
    // Case and width are not errors: they name the same person.
    let env = EnvIdentity::from_lookup(lookup(&[
        ("GUARD_TENANT", "Acme"),
        ("GUARD_USER", "\u{FF23}arol"),
        ("GUARD_SCOPES", ""),
    ]))
    .unwrap();
    let person = env.identity().person().unwrap();
    assert_eq!((person.tenant(), person.user()), ("acme", "carol"));
}

/// `from_env` reads the real process environment. The environment is process-wide, so the
/// test runs itself in a child process with the variables set (or unset) and reads its answer.
#[test]
fn env_identity_from_env_reads_the_process_environment() {
    const CHILD: &str = "GUARD_IDENTITY_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        match EnvIdentity::from_env() {
            Ok(env) => println!(
                "IDENTITY {}|{}|{}",
                env.identity().tenant,
                env.identity().user,
                scopes(env.identity()).join(" ")
            ),
            Err(error) => println!("ERROR {error}"),
        }
        return;
    }
    let this_test = guard_tests::test_name(
        module_path!(),
        "env_identity_from_env_reads_the_process_environment",
    );
    let run = |vars: &[(&str, &str)]| -> String {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                this_test.as_str(),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env_remove("GUARD_TENANT")
            .env_remove("GUARD_USER")
            .env_remove("GUARD_SCOPES");
        for (k, v) in vars {
            command.env(k, v);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "child failed: {output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        // The answer follows the harness's `test <name> ... ` on the same line.
        let start = ["IDENTITY ", "ERROR "]
            .iter()
            .filter_map(|tag| stdout.find(tag))
            .min()
            .unwrap_or_else(|| panic!("no answer from the child: {stdout}"));
        stdout[start..].lines().next().unwrap().to_owned()
    };
    assert_eq!(
        run(&[
            ("GUARD_TENANT", "acme"),
            ("GUARD_USER", "alice"),
            ("GUARD_SCOPES", "orders:cancel,orders:read"),
        ]),
        "IDENTITY acme|alice|orders:cancel orders:read"
    );
    let missing_user = run(&[("GUARD_TENANT", "acme"), ("GUARD_SCOPES", "x")]);
    assert!(
        missing_user.starts_with("ERROR GUARD_USER is not set"),
        "{missing_user}"
    );
}

// ---------------------------------------------------------------------------------------
// BearerIdentity, verified directly on header maps

#[test]
fn hs256_token_gives_identity_with_scopes_from_scope() {
    let identity = hs_provider()
        .identify_headers(&bearer(&hs256(&claims("acme", "alice"))))
        .unwrap();
    assert_eq!(identity.tenant, "acme");
    assert_eq!(identity.user, "alice");
    assert_eq!(scopes(&identity), ["orders:cancel", "orders:read"]);
}

#[test]
fn scopes_come_from_scp_arrays_too_and_the_tenant_claim_is_configurable() {
    // The tenant under an IdP-specific claim name, the scopes as an `scp` array.
    let mut c = with(
        without(without(claims("unused", "bob"), "scope"), "tenant"),
        "scp",
        json!(["orders:read", "refunds:write"]),
    );
    c["org_id"] = json!("globex");
    let token = hs256(&c);
    let provider = hs_provider().with_tenant_claim("org_id");
    let identity = provider.identify_headers(&bearer(&token)).unwrap();
    assert_eq!(identity.tenant, "globex");
    assert_eq!(identity.user, "bob");
    assert_eq!(scopes(&identity), ["orders:read", "refunds:write"]);

    // With the default tenant claim the same token has no tenant and is refused.
    capture();
    assert_denied(
        hs_provider().identify_headers(&bearer(&token)),
        &token,
        "tenant claim `tenant` missing",
    );
}

#[test]
fn a_token_without_scopes_gives_an_identity_with_none() {
    let token = hs256(&without(claims("acme", "alice"), "scope"));
    let identity = hs_provider().identify_headers(&bearer(&token)).unwrap();
    assert!(identity.scopes.is_empty());
}

#[test]
fn a_subject_with_invisible_characters_is_denied() {
    capture();
    let provider = hs_provider();
    for user in ["carol\u{200b}", "car\u{202e}ol", "carol\u{7}"] {
        let token = hs256(&claims("acme", user));
        assert_denied(
            provider.identify_headers(&bearer(&token)),
            &token,
            "the token names its subject in a refused spelling",
        );
    }
    let token = hs256(&claims("acme", "Carol"));
    let identity = provider.identify_headers(&bearer(&token)).unwrap();
    assert_eq!(identity.user, "Carol", "the provider's spelling is kept");
    assert_eq!(identity.person().unwrap().user(), "carol");
}

#[test]
fn wrong_signature_is_denied() {
    capture();
    let token = hs256_with(
        b"another-secret-another-secret-0123",
        &claims("acme", "alice"),
    );
    assert_denied(
        hs_provider().identify_headers(&bearer(&token)),
        &token,
        "signature does not verify",
    );
    // A valid token whose payload was swapped for another tenant's.
    let good = hs256(&claims("acme", "alice"));
    let evil = hs256_with(
        b"attacker-attacker-attacker-attacker",
        &claims("globex", "alice"),
    );
    let mut parts: Vec<&str> = good.split('.').collect();
    parts[1] = evil.split('.').nth(1).unwrap();
    let forged = parts.join(".");
    assert_denied(
        hs_provider().identify_headers(&bearer(&forged)),
        &forged,
        "signature does not verify",
    );
}

#[test]
fn wrong_issuer_and_wrong_audience_are_denied() {
    capture();
    let token = hs256(&with(
        claims("acme", "alice"),
        "iss",
        json!("https://evil.test"),
    ));
    assert_denied(
        hs_provider().identify_headers(&bearer(&token)),
        &token,
        "wrong issuer",
    );
    let token = hs256(&with(
        claims("acme", "alice"),
        "aud",
        json!("https://other-service.test"),
    ));
    assert_denied(
        hs_provider().identify_headers(&bearer(&token)),
        &token,
        "wrong audience",
    );
    // A token for several audiences is fine if ours is among them.
    let token = hs256(&with(
        claims("acme", "alice"),
        "aud",
        json!(["https://other-service.test", AUDIENCE]),
    ));
    assert!(hs_provider().identify_headers(&bearer(&token)).is_ok());
    for claim in ["iss", "aud", "sub", "exp"] {
        let token = hs256(&without(claims("acme", "alice"), claim));
        assert_denied(
            hs_provider().identify_headers(&bearer(&token)),
            &token,
            &format!("required claim `{claim}` missing"),
        );
    }
}

#[test]
fn expired_and_not_yet_valid_tokens_are_denied_beyond_the_leeway() {
    capture();
    let expired = hs256(&with(claims("acme", "alice"), "exp", json!(now() - 600)));
    let message = assert_denied(
        hs_provider().identify_headers(&bearer(&expired)),
        &expired,
        "token expired",
    );
    assert!(message.contains("expired"), "{message}");

    let early = hs256(&with(claims("acme", "alice"), "nbf", json!(now() + 600)));
    assert_denied(
        hs_provider().identify_headers(&bearer(&early)),
        &early,
        "token not yet valid (nbf in the future)",
    );

    // Within the default 30-second leeway a clock skew is tolerated...
    let skewed = hs256(&with(
        with(claims("acme", "alice"), "exp", json!(now() - 5)),
        "nbf",
        json!(now() + 5),
    ));
    assert!(hs_provider().identify_headers(&bearer(&skewed)).is_ok());
    // ...and with no leeway it is not.
    assert_denied(
        hs_provider()
            .with_leeway(Duration::ZERO)
            .identify_headers(&bearer(&skewed)),
        &skewed,
        "token expired",
    );
}

#[test]
fn missing_header_other_schemes_and_garbage_are_denied() {
    capture();
    let provider = hs_provider();
    let token = hs256(&claims("acme", "alice"));

    let message = assert_denied(
        provider.identify_headers(&http::HeaderMap::new()),
        &token,
        "no Authorization header",
    );
    assert!(message.contains("Authorization: Bearer"), "{message}");

    let basic = "Basic YWxpY2U6c2VjcmV0LXBhc3N3b3Jk";
    assert_denied(
        provider.identify_headers(&headers(basic)),
        basic,
        "Authorization header does not use the Bearer scheme",
    );
    // The JWT itself without a scheme is not a bearer credential either.
    assert_denied(
        provider.identify_headers(&headers(&token)),
        &token,
        "Authorization header does not use the Bearer scheme",
    );
    assert_denied(
        provider.identify_headers(&headers("Bearer ")),
        &token,
        "Bearer credentials are empty or contain whitespace",
    );
    for (garbage, reason) in [
        ("not-a-jwt-at-all-xxxxxxxx", "malformed token"),
        ("aaaaaaaaaa.bbbbbbbbbbb.ccccccccccc", "malformed token"),
        // A well-formed HS256 header: the signature is checked before the payload is read.
        (
            "eyJhbGciOiJIUzI1NiJ9.%%%%%%%%%%%%.zzzzzzzzzzzz",
            "signature does not verify",
        ),
    ] {
        assert_denied(provider.identify_headers(&bearer(garbage)), garbage, reason);
    }
    // The scheme is case-insensitive (RFC 7235).
    assert!(
        provider
            .identify_headers(&headers(&format!("bearer {token}")))
            .is_ok()
    );
    // Two Authorization headers are ambiguous.
    let mut two = bearer(&token);
    two.append(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    assert_denied(
        provider.identify_headers(&two),
        &token,
        "more than one Authorization header",
    );
}

#[test]
fn rs256_and_es256_tokens_verify_against_pem_public_keys() {
    capture();
    let rs = BearerIdentity::rs256_pem(RS256_PUBLIC, ISSUER, AUDIENCE).unwrap();
    let identity = rs
        .identify_headers(&bearer(&rs256(RS256_PRIVATE, &claims("acme", "carol"))))
        .unwrap();
    assert_eq!(
        (identity.tenant.as_str(), identity.user.as_str()),
        ("acme", "carol")
    );
    assert_eq!(scopes(&identity), ["orders:cancel", "orders:read"]);

    let other = rs256(RS256_OTHER_PRIVATE, &claims("acme", "carol"));
    assert_denied(
        rs.identify_headers(&bearer(&other)),
        &other,
        "signature does not verify",
    );
    // Algorithm confusion: an HS256 token keyed with the public key PEM is refused.
    let confused = hs256_with(RS256_PUBLIC, &claims("acme", "carol"));
    assert_denied(
        rs.identify_headers(&bearer(&confused)),
        &confused,
        "algorithm not accepted",
    );
    // An unsigned token (`alg: none`).
    let header = base64url(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64url(claims("acme", "carol").to_string().as_bytes());
    let unsigned = format!("{header}.{payload}.");
    assert!(rs.identify_headers(&bearer(&unsigned)).is_err());
    assert!(hs_provider().identify_headers(&bearer(&unsigned)).is_err());

    let es = BearerIdentity::es256_pem(ES256_PUBLIC, ISSUER, AUDIENCE).unwrap();
    let identity = es
        .identify_headers(&bearer(&es256(&claims("globex", "dave"))))
        .unwrap();
    assert_eq!(
        (identity.tenant.as_str(), identity.user.as_str()),
        ("globex", "dave")
    );
    let rs_token = rs256(RS256_PRIVATE, &claims("globex", "dave"));
    assert_denied(
        es.identify_headers(&bearer(&rs_token)),
        &rs_token,
        "algorithm not accepted",
    );
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn provider_construction_refuses_weak_or_unusable_configuration() {
    let short = BearerIdentity::hs256(b"short", ISSUER, AUDIENCE).unwrap_err();
    assert!(short.contains("at least 32"), "{short}");
    assert!(BearerIdentity::hs256(SECRET, "", AUDIENCE).is_err());
    assert!(BearerIdentity::hs256(SECRET, ISSUER, " ").is_err());
    let bad_pem = BearerIdentity::rs256_pem(b"not a pem", ISSUER, AUDIENCE).unwrap_err();
    assert!(bad_pem.contains("RS256 public key"), "{bad_pem}");
}

// ---------------------------------------------------------------------------------------
// Scopes

#[test]
fn require_scopes_allows_a_caller_holding_every_scope() {
    let identity = Identity::new("acme", "alice", ["orders:read", "orders:cancel"]);
    require_scopes(&identity, "cancel_order", &["orders:cancel"]).unwrap();
    require_scopes(&identity, "cancel_order", &["orders:cancel", "orders:read"]).unwrap();
    require_scopes(&identity, "cancel_order", &[]).unwrap();
}

#[test]
fn a_missing_scope_is_denied_by_name_and_audited() {
    capture();
    let identity = Identity::new("tenant-scope-audit", "mallory", ["orders:read"]);
    let error = require_scopes(
        &identity,
        "cancel_order",
        &["orders:read", "orders:cancel", "refunds:write"],
    )
    .unwrap_err();
    assert_eq!(error.code(), Code::PermissionDenied);
    assert!(error.message().contains("`orders:cancel`"), "{error}");
    assert!(error.message().contains("`refunds:write`"), "{error}");
    assert!(!error.message().contains("`orders:read`"), "{error}");
    assert!(error.message().contains("cancel_order"), "{error}");

    let trace_id = trace_id_of(error.message());
    let audit: Vec<_> = events_with_trace(&trace_id)
        .into_iter()
        .filter(|e| e.target == "guard::audit")
        .collect();
    assert_eq!(audit.len(), 1, "one audit record per denial: {audit:?}");
    let record = &audit[0];
    assert_eq!(record.field("tool"), Some("cancel_order"));
    assert_eq!(record.field("outcome"), Some("denied"));
    assert_eq!(record.field("code"), Some(Code::PermissionDenied.as_str()));
    assert_eq!(record.field("tenant"), Some("tenant-scope-audit"));
    assert_eq!(record.field("user"), Some("mallory"));
    assert_eq!(
        record.field("missing_scope"),
        Some("orders:cancel refunds:write")
    );
}

#[test]
fn an_allowed_call_writes_no_denial() {
    capture();
    let identity = Identity::new("tenant-scope-allowed", "alice", ["orders:cancel"]);
    require_scopes(&identity, "cancel_order", &["orders:cancel"]).unwrap();
    assert!(
        events()
            .iter()
            .all(|e| e.field("tenant") != Some("tenant-scope-allowed")),
        "an allowed call is not a denial"
    );
}

// ---------------------------------------------------------------------------------------
// Through rmcp: the provider reads the request context of a real tool call.

#[derive(Clone)]
struct Orders {
    identity: Arc<dyn IdentityProvider>,
}

#[tool_router(server_handler)]
impl Orders {
    #[tool(description = "Who is calling")]
    async fn whoami(&self, ctx: RequestContext<RoleServer>) -> Result<String, ToolError> {
        let identity = self.identity.identify(&ctx)?;
        Ok(json!({
            "tenant": identity.tenant,
            "user": identity.user,
            "scopes": identity.scopes,
        })
        .to_string())
    }

    #[tool(description = "Cancel an order")]
    async fn cancel_order(&self, ctx: RequestContext<RoleServer>) -> Result<String, ToolError> {
        let identity = self.identity.identify(&ctx)?;
        require_scopes(&identity, "cancel_order", &["orders:cancel"])?;
        Ok(format!(
            "cancelled for {}/{}",
            identity.tenant, identity.user
        ))
    }
}

/// Serves `Orders` over streamable HTTP on a loopback port; returns the port.
async fn serve_http(identity: Arc<dyn IdentityProvider>) -> u16 {
    serve_over_http(Orders { identity }).await
}

/// Serves `server` over streamable HTTP (stateless, JSON responses) on a loopback port.
async fn serve_over_http<S: rmcp::ServerHandler + Clone + Send + Sync + 'static>(server: S) -> u16 {
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

/// One stateless `tools/call` over HTTP with an optional Authorization header; the JSON-RPC
/// result object.
async fn http_call(port: u16, tool: &str, authorization: Option<&str>) -> Value {
    http_call_with(port, tool, json!({}), authorization).await
}

async fn http_call_with(
    port: u16,
    tool: &str,
    arguments: Value,
    authorization: Option<&str>,
) -> Value {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    })
    .to_string();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("the server answers")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n\n{body}");
    let message: Value = serde_json::from_str(body.trim())
        .unwrap_or_else(|e| panic!("a JSON-RPC response ({e}): {head}\n\n{body}"));
    message["result"].clone()
}

fn result_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_valid_bearer_token_identifies_the_caller() {
    capture();
    let port = serve_http(Arc::new(hs_provider())).await;
    let token = hs256(&claims("acme", "alice"));
    let result = http_call(port, "whoami", Some(&format!("Bearer {token}"))).await;
    assert_ne!(result["isError"], json!(true), "{result}");
    let identity: Value = serde_json::from_str(&result_text(&result)).unwrap();
    assert_eq!(
        identity,
        json!({"tenant": "acme", "user": "alice", "scopes": ["orders:cancel", "orders:read"]})
    );

    let rs = BearerIdentity::rs256_pem(RS256_PUBLIC, ISSUER, AUDIENCE).unwrap();
    let port = serve_http(Arc::new(rs)).await;
    let token = rs256(RS256_PRIVATE, &claims("globex", "carol"));
    let result = http_call(port, "cancel_order", Some(&format!("Bearer {token}"))).await;
    assert_eq!(result_text(&result), "cancelled for globex/carol");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_missing_or_bad_tokens_are_permission_denied_results() {
    capture();
    let port = serve_http(Arc::new(hs_provider())).await;
    let expired = hs256(&with(claims("acme", "alice"), "exp", json!(now() - 600)));
    let wrong_audience = hs256(&with(claims("acme", "alice"), "aud", json!("elsewhere")));
    for (authorization, token) in [
        (None, String::new()),
        (Some(format!("Bearer {expired}")), expired.clone()),
        (
            Some(format!("Bearer {wrong_audience}")),
            wrong_audience.clone(),
        ),
        (
            Some("Basic YWxpY2U6c2VjcmV0".to_owned()),
            "YWxpY2U6c2VjcmV0".to_owned(),
        ),
    ] {
        let result = http_call(port, "whoami", authorization.as_deref()).await;
        assert_eq!(result["isError"], json!(true), "{result}");
        let text = result_text(&result);
        assert!(text.starts_with("[PERMISSION_DENIED] "), "{text}");
        assert!(
            text.contains("Bearer") || text.contains("access token"),
            "{text}"
        );
        if !token.is_empty() {
            assert!(
                !text.contains(&token),
                "the result echoes the token: {text}"
            );
            let signature = token.rsplit('.').next().unwrap();
            assert!(
                !text.contains(signature),
                "the result echoes the signature: {text}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_missing_scope_is_denied_and_audited() {
    capture();
    let port = serve_http(Arc::new(hs_provider())).await;
    let token = hs256(&with(
        claims("tenant-http-scope", "mallory"),
        "scope",
        json!("orders:read"),
    ));
    let result = http_call(port, "cancel_order", Some(&format!("Bearer {token}"))).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    let text = result_text(&result);
    assert!(text.starts_with("[PERMISSION_DENIED] "), "{text}");
    assert!(text.contains("`orders:cancel`"), "{text}");
    let trace_id = trace_id_of(&text);
    let audit: Vec<_> = events_with_trace(&trace_id)
        .into_iter()
        .filter(|e| e.target == "guard::audit")
        .collect();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0].field("tenant"), Some("tenant-http-scope"));
    assert_eq!(audit[0].field("user"), Some("mallory"));
    assert_eq!(audit[0].field("tool"), Some("cancel_order"));
    assert_eq!(audit[0].field("missing_scope"), Some("orders:cancel"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_identity_serves_stdio_but_refuses_http_requests() {
    capture();
    let env = EnvIdentity::new(Identity::new("acme", "operator", ["orders:cancel"]));

    // In process (the stdio shape): no HTTP request behind the call.
    let server = Orders {
        identity: Arc::new(env.clone()),
    };
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ScriptedHuman::new(support::PUSH)
        .connect(client_io)
        .await
        .unwrap();
    let result = support::call(&client, "cancel_order", json!({})).await;
    assert_eq!(support::text(&result), "cancelled for acme/operator");

    // Over HTTP the same provider would make every caller that operator: refused.
    let port = serve_http(Arc::new(env)).await;
    let result = http_call(port, "cancel_order", None).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(
        result_text(&result).starts_with("[PERMISSION_DENIED] "),
        "{result}"
    );

    // And a bearer provider has nothing to verify on a non-HTTP call.
    let server = Orders {
        identity: Arc::new(hs_provider()),
    };
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ScriptedHuman::new(support::PUSH)
        .connect(client_io)
        .await
        .unwrap();
    let result = support::call(&client, "whoami", json!({})).await;
    assert!(support::is_error(&result));
    assert_eq!(support::code(&result).as_deref(), Some("PERMISSION_DENIED"));
}

/// Two-phase operations over HTTP: each request's caller is its verified token, so another
/// user's token cannot confirm an operation, and the environment identity is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_operations_belong_to_the_token_that_prepared_them() {
    use rmcp_guard::{
        Guard,
        ops::{Operations, SqliteStore},
    };
    capture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let store = order_cancel::stores::open_sqlite(&path, order_cancel::schema::DEMO_ORDERS)
        .await
        .unwrap();
    let serve = |identity: Arc<dyn IdentityProvider>, store: SqliteStore| {
        let guard = Guard::ephemeral()
            .unwrap()
            .with_operations(Operations::new(store, identity));
        serve_over_http(order_cancel::OrderCancel::new(guard))
    };
    let port = serve(Arc::new(hs_provider()), store.clone()).await;
    let token = |user: &str| {
        let claims = with(
            claims("tenant_demo", user),
            "scope",
            json!("order.cancel.request"),
        );
        format!("Bearer {}", hs256(&claims))
    };
    let (alice, bob) = (token("alice"), token("bob"));

    let prepared = http_call_with(
        port,
        "prepare_order_cancel",
        json!({"order_no": "A10001", "reason": "changed my mind"}),
        Some(&alice),
    )
    .await;
    let id = prepared["structuredContent"]["operation_id"]
        .as_str()
        .unwrap_or_else(|| panic!("an operation_id: {prepared}"))
        .to_owned();
    let args = json!({"operation_id": id});

    let refused = http_call_with(port, "confirm_order_cancel", args.clone(), Some(&bob)).await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    assert!(result_text(&refused).starts_with("[OPERATION_NOT_FOUND]"));
    let anonymous = http_call_with(port, "confirm_order_cancel", args.clone(), None).await;
    assert!(result_text(&anonymous).starts_with("[PERMISSION_DENIED]"));

    let done = http_call_with(port, "confirm_order_cancel", args.clone(), Some(&alice)).await;
    assert_eq!(
        done["structuredContent"]["status"],
        json!("SUBMITTED"),
        "{done}"
    );
    for result in [&prepared, &refused, &anonymous, &done] {
        let text = result.to_string();
        assert!(
            !text.contains(alice.trim_start_matches("Bearer ")),
            "no token echoed"
        );
    }

    // The same store served with the environment identity refuses HTTP callers.
    let env = EnvIdentity::new(Identity::new(
        "tenant_demo",
        "alice",
        ["order.cancel.request"],
    ));
    let env_port = serve(Arc::new(env), store).await;
    let refused = http_call_with(env_port, "get_operation_result", args, None).await;
    assert!(
        result_text(&refused).starts_with("[PERMISSION_DENIED]"),
        "{refused}"
    );
}
