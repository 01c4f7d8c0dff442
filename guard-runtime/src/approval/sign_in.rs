//! Who is at the browser, when approvers must sign in: the deployment's identity provider
//! says, not the link.
//!
//! A request to the page names its person in one of two ways. An `Authorization: Bearer`
//! header, which an authenticating proxy in front of the page (oauth2-proxy and the like)
//! adds, is verified on every request. Or the person pastes an access token into the page's
//! sign-in form once; the page verifies it and answers with a session cookie
//! (`guard_approver`: the person and an expiry, HMAC-SHA256-signed under a key made when the
//! page starts, `HttpOnly`, `SameSite=Strict`, `Secure` on https, scoped to the approval
//! path, [`SESSION`] long). A session is only as good as that key: a restart ends every
//! session.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use url::Url;

use crate::{identity::Identity, person::Person};

/// How long a session cookie lasts.
pub(super) const SESSION: Duration = Duration::from_secs(15 * 60);

const COOKIE: &str = "guard_approver";

/// Verifies an approver's access token with the deployment's identity provider.
pub trait ApproverSignIn: Send + Sync + 'static {
    /// The identity `token` proves, or why it proves none (shown to the person signing in,
    /// so never the token or the reason a verifier keeps for its log).
    fn verify_token(&self, token: &str) -> Result<Identity, String>;
}

#[cfg(feature = "jwt")]
impl ApproverSignIn for crate::identity::BearerIdentity {
    fn verify_token(&self, token: &str) -> Result<Identity, String> {
        self.verify(token).map_err(|e| e.message().to_owned())
    }
}

/// The page's sessions: the verifier, and the key session cookies are signed with.
pub(super) struct Sessions {
    verifier: Arc<dyn ApproverSignIn>,
    key: [u8; 32],
    path: String,
    secure: bool,
}

impl Sessions {
    pub(super) fn new(verifier: Arc<dyn ApproverSignIn>, base: &Url) -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| e.to_string())?;
        Ok(Self {
            verifier,
            key,
            path: format!("{}approval/", base.path()),
            secure: base.scheme() == "https",
        })
    }

    /// The person a request names: its bearer token, else its session cookie. `None` when
    /// it names nobody, or nobody the provider vouches for.
    pub(super) fn signed_in(&self, headers: &http::HeaderMap) -> Option<Person> {
        if let Some(token) = bearer(headers) {
            return self.person(token).ok();
        }
        headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
            .find_map(|value| self.open(value))
    }

    /// Verifies `token` and returns its person and the `Set-Cookie` value of a new session.
    pub(super) fn sign_in(&self, token: &str) -> Result<(Person, String), String> {
        let person = self.person(token.trim())?;
        let expires = now_secs() + SESSION.as_secs();
        let payload = serde_json::json!([person.tenant(), person.user(), expires]).to_string();
        let payload = B64.encode(payload);
        let mac = B64.encode(self.mac(&payload).finalize().into_bytes());
        let secure = if self.secure { "; Secure" } else { "" };
        let cookie = format!(
            "{COOKIE}={payload}.{mac}; Path={}; Max-Age={}; HttpOnly; SameSite=Strict{secure}",
            self.path,
            SESSION.as_secs()
        );
        Ok((person, cookie))
    }

    fn person(&self, token: &str) -> Result<Person, String> {
        let identity = self.verifier.verify_token(token)?;
        Person::new(&identity.tenant, &identity.user).map_err(|e| e.to_string())
    }

    /// The person of a cookie value this page signed and that has not expired.
    fn open(&self, value: &str) -> Option<Person> {
        let (payload, mac) = value.split_once('.')?;
        self.mac(payload)
            .verify_slice(&B64.decode(mac).ok()?)
            .ok()?;
        let (tenant, user, expires): (String, String, u64) =
            serde_json::from_slice(&B64.decode(payload).ok()?).ok()?;
        if expires <= now_secs() {
            return None;
        }
        Person::new(&tenant, &user).ok()
    }

    fn mac(&self, payload: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(payload.as_bytes());
        mac
    }
}

/// The token of an `Authorization: Bearer` header, if there is exactly one.
fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next()?.to_str().ok()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verifier that knows two tokens.
    struct Tokens;

    impl ApproverSignIn for Tokens {
        fn verify_token(&self, token: &str) -> Result<Identity, String> {
            match token {
                "bob-token" => Ok(Identity::new("acme", "Bob", Vec::<String>::new())),
                "alice-token" => Ok(Identity::new("acme", "alice", Vec::<String>::new())),
                _ => Err("The access token was rejected".into()),
            }
        }
    }

    fn sessions() -> Sessions {
        Sessions::new(
            Arc::new(Tokens),
            &Url::parse("https://approve.example/").unwrap(),
        )
        .unwrap()
    }

    fn with(name: http::HeaderName, value: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(name, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_signed_session_names_its_person_and_a_forged_one_nobody() {
        let sessions = sessions();
        let (bob, cookie) = sessions.sign_in("bob-token").unwrap();
        assert_eq!(bob.user(), "bob");
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        assert!(cookie.contains("Secure") && cookie.contains("Path=/approval/"));
        let value = cookie.split(';').next().unwrap();
        let headers = with(http::header::COOKIE, &format!("theme=dark; {value}"));
        assert_eq!(sessions.signed_in(&headers), Some(bob));

        // Another page's key, or a payload edited to name someone else, proves nothing.
        let other = self::sessions();
        assert_eq!(other.signed_in(&headers), None);
        let (_, alice) = sessions.sign_in("alice-token").unwrap();
        let alice_payload = alice.split(['=', '.']).nth(1).unwrap();
        let bob_mac = value.split('.').nth(1).unwrap();
        let forged = with(
            http::header::COOKIE,
            &format!("{COOKIE}={alice_payload}.{bob_mac}"),
        );
        assert_eq!(sessions.signed_in(&forged), None);
        assert!(sessions.sign_in("stolen").is_err());
    }

    #[test]
    fn a_bearer_header_is_verified_on_each_request() {
        let sessions = sessions();
        let bob = with(http::header::AUTHORIZATION, "Bearer bob-token");
        assert_eq!(sessions.signed_in(&bob).unwrap().user(), "bob");
        let bad = with(http::header::AUTHORIZATION, "Bearer nope");
        assert_eq!(sessions.signed_in(&bad), None);
    }
}
