//! Identity from a verified JWT bearer token on streamable HTTP.

use std::{fmt, time::Duration};

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use rmcp::{RoleServer, service::RequestContext};
use serde_json::{Map, Value};

use super::{Identity, IdentityProvider, split_scopes};
use crate::error::{Code, ToolError};

/// Clock skew tolerated on `exp` and `nbf` unless [`BearerIdentity::with_leeway`] says otherwise.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// The caller of each HTTP request, from the JWT in its `Authorization: Bearer` header.
///
/// The token must be signed with the configured key and algorithm (only that algorithm is
/// accepted), carry `iss` equal to the issuer, `aud` containing the audience, `exp` in the
/// future and, if present, `nbf` in the past, each within a small leeway. Claims: `sub` is
/// the user, the tenant claim (default `tenant`) the tenant, and the scopes come from
/// `scope` (space-separated) and/or `scp` (an array, or a space-separated string).
///
/// Any failure is a `PERMISSION_DENIED` error telling the client what to send; the precise
/// reason is logged with `tracing::warn!` under a trace id. The token itself is never logged
/// nor echoed.
#[derive(Clone)]
pub struct BearerIdentity {
    key: DecodingKey,
    validation: Validation,
    issuer: String,
    audience: String,
    tenant_claim: String,
}

impl fmt::Debug for BearerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerIdentity")
            .field("algorithm", &self.validation.algorithms)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("tenant_claim", &self.tenant_claim)
            .field("leeway_secs", &self.validation.leeway)
            .finish_non_exhaustive()
    }
}

/// The advice for a token that fails a check other than its validity period.
const REJECTED: &str = "The access token was rejected: obtain a new one and retry";

/// Shortest HS256 secret accepted: 256 bits, the size of the HMAC-SHA256 output.
const MIN_HS256_SECRET: usize = 32;

impl BearerIdentity {
    /// Tokens signed with HMAC-SHA256 under a shared `secret` (at least 32 bytes).
    pub fn hs256(secret: &[u8], issuer: &str, audience: &str) -> Result<Self, String> {
        if secret.len() < MIN_HS256_SECRET {
            return Err(format!(
                "the HS256 secret has {} bytes; use at least {MIN_HS256_SECRET} random bytes",
                secret.len()
            ));
        }
        let key = DecodingKey::from_secret(secret)
            .map_err(|e| format!("cannot use the HS256 secret: {e}"))?;
        Self::build(key, Algorithm::HS256, issuer, audience)
    }

    /// Tokens signed with RSA (RS256), verified with a PEM public key (PKCS#1 or SPKI).
    pub fn rs256_pem(public_key_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, String> {
        let key = DecodingKey::from_rsa_pem(public_key_pem)
            .map_err(|e| format!("cannot read the RS256 public key PEM: {e}"))?;
        Self::build(key, Algorithm::RS256, issuer, audience)
    }

    /// Tokens signed with ECDSA P-256 (ES256), verified with a PEM public key (SPKI).
    pub fn es256_pem(public_key_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, String> {
        let key = DecodingKey::from_ec_pem(public_key_pem)
            .map_err(|e| format!("cannot read the ES256 public key PEM: {e}"))?;
        Self::build(key, Algorithm::ES256, issuer, audience)
    }

    fn build(
        key: DecodingKey,
        algorithm: Algorithm,
        issuer: &str,
        audience: &str,
    ) -> Result<Self, String> {
        if issuer.trim().is_empty() {
            return Err("the token issuer must not be empty".into());
        }
        if audience.trim().is_empty() {
            return Err("the token audience must not be empty".into());
        }
        ensure_crypto_provider()?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.leeway = DEFAULT_LEEWAY.as_secs();
        Ok(Self {
            key,
            validation,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            tenant_claim: "tenant".into(),
        })
    }

    /// The claim that names the tenant (default `tenant`).
    pub fn with_tenant_claim(mut self, claim: impl Into<String>) -> Self {
        self.tenant_claim = claim.into();
        self
    }

    /// Clock skew tolerated on `exp` and `nbf` (default 30 seconds).
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.validation.leeway = leeway.as_secs();
        self
    }

    /// The identity in `request`'s `Authorization: Bearer` header.
    pub fn identify_headers(&self, headers: &http::HeaderMap) -> Result<Identity, ToolError> {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Err(self.deny(
                "no Authorization header",
                "This tool needs to know who is calling: send the header \
                 `Authorization: Bearer <access token>`",
            ));
        };
        if values.next().is_some() {
            return Err(self.deny(
                "more than one Authorization header",
                "Send exactly one `Authorization: Bearer <access token>` header",
            ));
        }
        let Ok(value) = value.to_str() else {
            return Err(self.deny(
                "Authorization header is not visible ASCII",
                "The Authorization header is malformed: send `Authorization: Bearer <access token>`",
            ));
        };
        let value = value.trim();
        let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.deny(
                "Authorization header does not use the Bearer scheme",
                "The Authorization header must use the Bearer scheme: \
                 `Authorization: Bearer <access token>`",
            ));
        }
        let token = token.trim();
        if token.is_empty() || token.contains(char::is_whitespace) {
            return Err(self.deny(
                "Bearer credentials are empty or contain whitespace",
                "The Authorization header is malformed: send `Authorization: Bearer <access token>`",
            ));
        }
        self.verify(token)
    }

    /// Verifies `token` (the bare JWT, without `Bearer `) and reads the identity from it.
    pub fn verify(&self, token: &str) -> Result<Identity, ToolError> {
        match jsonwebtoken::decode::<Map<String, Value>>(token, &self.key, &self.validation) {
            Ok(data) => self.identity_from(&data.claims),
            Err(error) => {
                let (reason, advice) = rejection(error.kind());
                Err(self.deny(&reason, advice))
            }
        }
    }

    fn identity_from(&self, claims: &Map<String, Value>) -> Result<Identity, ToolError> {
        let rejected = REJECTED;
        let user = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.trim().is_empty() => sub.clone(),
            _ => return Err(self.deny("claim `sub` is not a non-empty string", rejected)),
        };
        let tenant = match claims.get(&self.tenant_claim) {
            Some(Value::String(tenant)) if !tenant.trim().is_empty() => tenant.clone(),
            Some(_) => {
                let reason = format!("claim `{}` is not a non-empty string", self.tenant_claim);
                return Err(self.deny(&reason, rejected));
            }
            None => {
                let reason = format!("tenant claim `{}` missing", self.tenant_claim);
                return Err(self.deny(&reason, rejected));
            }
        };
        // A name guard would refuse to compare (invisible characters, controls) could make one
        // person pass for another: refused here, where the token is read.
        if crate::person::Person::new(&tenant, &user).is_err() {
            let reason = "the token names its subject in a refused spelling";
            return Err(self.deny(reason, rejected));
        }
        let mut identity = Identity::new(tenant, user, std::iter::empty::<String>());
        for name in ["scope", "scp"] {
            match claims.get(name) {
                None | Some(Value::Null) => {}
                Some(Value::String(list)) => identity.scopes.extend(split_scopes(list)),
                Some(Value::Array(items)) if name == "scp" => {
                    for item in items {
                        let Value::String(scope) = item else {
                            let reason = "claim `scp` holds a non-string item";
                            return Err(self.deny(reason, rejected));
                        };
                        identity.scopes.extend(split_scopes(scope));
                    }
                }
                Some(_) => {
                    let reason = format!("claim `{name}` has the wrong type");
                    return Err(self.deny(&reason, rejected));
                }
            }
        }
        Ok(identity)
    }

    /// A `PERMISSION_DENIED` error with `advice` for the client; `reason` goes to the log only.
    fn deny(&self, reason: &str, advice: &str) -> ToolError {
        let trace_id = crate::trace::new_id();
        tracing::warn!(
            %trace_id,
            reason,
            issuer = %self.issuer,
            audience = %self.audience,
            "bearer authentication failed"
        );
        ToolError::new(
            Code::PermissionDenied,
            format!(
                "{advice}. The token must be issued by {} for audience {}. Nothing was done \
                 (trace_id {trace_id}).",
                self.issuer, self.audience
            ),
        )
    }
}

impl IdentityProvider for BearerIdentity {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        match request.extensions.get::<http::request::Parts>() {
            Some(parts) => self.identify_headers(&parts.headers),
            None => Err(self.deny(
                "request did not arrive over HTTP (no HTTP request parts)",
                "This tool needs an authenticated HTTP request: connect over streamable HTTP \
                 with `Authorization: Bearer <access token>`",
            )),
        }
    }
}

/// The reason to log and the advice to give for a token jsonwebtoken refused.
fn rejection(kind: &ErrorKind) -> (String, &'static str) {
    match kind {
        ErrorKind::ExpiredSignature => (
            "token expired".into(),
            "The access token has expired: obtain a new one and retry",
        ),
        ErrorKind::ImmatureSignature => (
            "token not yet valid (nbf in the future)".into(),
            "The access token is not valid yet: check the client's clock, \
             obtain a new token and retry",
        ),
        ErrorKind::InvalidSignature => ("signature does not verify".into(), REJECTED),
        ErrorKind::InvalidIssuer => ("wrong issuer".into(), REJECTED),
        ErrorKind::InvalidAudience => ("wrong audience".into(), REJECTED),
        ErrorKind::InvalidAlgorithm => ("algorithm not accepted".into(), REJECTED),
        ErrorKind::MissingRequiredClaim(claim) => {
            (format!("required claim `{claim}` missing"), REJECTED)
        }
        ErrorKind::InvalidClaimFormat(claim) => {
            (format!("claim `{claim}` has the wrong type"), REJECTED)
        }
        ErrorKind::InvalidToken
        | ErrorKind::Base64(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => (
            "malformed token".into(),
            "The bearer credentials are not a valid access token: \
             obtain a new one and retry",
        ),
        other => (format!("verification failed: {other:?}"), REJECTED),
    }
}

/// jsonwebtoken picks its crypto backend from its features; when another crate in the build
/// also enables the `aws_lc_rs` backend, neither is chosen and the RustCrypto one is installed.
fn ensure_crypto_provider() -> Result<(), String> {
    use jsonwebtoken::crypto::CryptoProvider;
    if CryptoProvider::try_get_default().is_some() {
        return Ok(());
    }
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    CryptoProvider::try_get_default()
        .map(|_| ())
        .ok_or_else(|| "no JWT crypto backend is available".to_owned())
}
