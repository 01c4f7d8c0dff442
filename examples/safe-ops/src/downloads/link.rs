//! The link itself: what it signs, and every check a request for it passes before a byte of
//! the file is read. Kept apart from the HTTP server so the checks can be read, and tested,
//! on their own.

use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp_guard::sandbox::{Entry, ErrorKind, Lookup, Pin};
use sha2::Sha256;

use crate::sandbox::Sandbox;

/// The largest file a link is made for (16 MiB): the endpoint reads it whole.
pub(super) const MAX_BYTES: u64 = 16 << 20;

/// Where the link's path starts on the endpoint.
pub(super) const PREFIX: &str = "/download/";

/// What a path segment keeps unencoded: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Signs links for one endpoint and checks the requests it gets. The key is made from the
/// OS random source when the endpoint starts and is never stored, so every link dies with
/// the process. Cloning shares the key.
#[derive(Clone)]
pub struct Links {
    key: Arc<[u8; 32]>,
    base: String,
}

/// Why a request for a link was refused: each has its HTTP status and a plain sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The signature is missing or does not match: the link was altered, or made by
    /// another process.
    NotSigned,
    /// The link expired at this time (Unix seconds).
    Expired(u64),
    /// The file is no longer the one the link was made for.
    Changed,
    /// No file is at the path any more.
    Gone,
    /// The sandbox refuses the path (outside the root, a symlink, not a regular file).
    NotServed(String),
    /// The file could not be read; the server's log has the detail.
    Failed,
}

impl Links {
    /// Links served at `base` (`http://127.0.0.1:8081`), under a fresh random key.
    pub fn new(base: &str) -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| {
            format!("cannot make a key for download links: the system random source failed: {e}")
        })?;
        Ok(Self {
            key: Arc::new(key),
            base: base.trim_end_matches('/').to_owned(),
        })
    }

    /// Where the endpoint is (`http://127.0.0.1:8081`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The link to `entry` as it is now, valid until `expires` (Unix seconds):
    /// `BASE/download/PATH?expires=...&pin=...&sig=...`, where `pin` is the file's identity
    /// and `sig` the HMAC-SHA256 of the path, the expiry and the pin.
    pub fn link(&self, entry: &Entry, expires: u64) -> String {
        let path = entry.path().to_string();
        let pin = identity(&entry.pin());
        let encoded: Vec<String> = path
            .split('/')
            .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
            .collect();
        format!(
            "{}{PREFIX}{}?expires={expires}&pin={pin}&sig={}",
            self.base,
            encoded.join("/"),
            hex(&self.mac(&path, expires, &pin).finalize().into_bytes())
        )
    }

    /// The bytes a request for `raw_path` (the request's path after `/download/`, still
    /// percent-encoded) with `query` may download at `now` (Unix seconds). The signature
    /// is checked first, in constant time, so a request that does not hold a link learns
    /// nothing about the sandbox; then the expiry; then the file, read through the sandbox's
    /// handle and compared with the pin the link carries.
    pub fn open(
        &self,
        sandbox: &Sandbox,
        raw_path: &str,
        query: &str,
        now: u64,
    ) -> Result<Vec<u8>, Refusal> {
        let path = percent_decode_str(raw_path)
            .decode_utf8()
            .map_err(|_| Refusal::NotSigned)?;
        let field = |name: &str| {
            url_fields(query)
                .find(|(key, _)| key == name)
                .map(|(_, value)| value)
        };
        let expires: u64 = field("expires")
            .and_then(|v| v.parse().ok())
            .ok_or(Refusal::NotSigned)?;
        let pin = field("pin").ok_or(Refusal::NotSigned)?;
        let sig = field("sig")
            .and_then(|v| unhex(&v))
            .ok_or(Refusal::NotSigned)?;
        self.mac(&path, expires, &pin)
            .verify_slice(&sig)
            .map_err(|_| Refusal::NotSigned)?;
        if now >= expires {
            return Err(Refusal::Expired(expires));
        }
        match sandbox.read(&path, MAX_BYTES) {
            Ok((Lookup::Missing(_), _, _)) => Err(Refusal::Gone),
            Ok((Lookup::File(entry), bytes, more)) => {
                // The pin holds the size: a file grown past the cap is a changed file.
                if more || identity(&entry.pin()) != pin {
                    return Err(Refusal::Changed);
                }
                Ok(bytes)
            }
            Err(error) if error.kind() == ErrorKind::Failed => {
                tracing::warn!(%error, "a download link's file could not be read");
                Err(Refusal::Failed)
            }
            Err(error) => Err(Refusal::NotServed(error.message().to_owned())),
        }
    }

    /// HMAC-SHA256 over the path, the expiry and the pin, as one JSON array, so no two
    /// different triples sign the same bytes.
    fn mac(&self, path: &str, expires: u64, pin: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key[..]).expect("HMAC takes keys of any length");
        let signed = serde_json::json!(["safe-ops download link v1", path, expires, pin]);
        mac.update(signed.to_string().as_bytes());
        mac
    }
}

impl Refusal {
    /// The HTTP status: 403 for a link this server did not make or a path it does not
    /// serve, 410 for a link that was good and is no longer, 404 for a file that is gone.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::NotSigned | Refusal::NotServed(_) => 403,
            Refusal::Expired(_) | Refusal::Changed => 410,
            Refusal::Gone => 404,
            Refusal::Failed => 500,
        }
    }

    /// What happened and what to do next, as the response's plain-text body.
    pub fn text(&self) -> String {
        const ASK: &str = "Ask for a new link with create_download_link.";
        match self {
            Refusal::NotSigned => format!(
                "This download link is not valid: its signature does not match. It was altered, or made by an earlier run of safe-ops (links end when the process does). {ASK}"
            ),
            Refusal::Expired(at) => format!("This download link expired at {}. {ASK}", date(*at)),
            Refusal::Changed => format!(
                "The file changed or was replaced after this link was made, so the link no longer works. {ASK}"
            ),
            Refusal::Gone => {
                "The file this link was made for is gone; there is nothing to download.".to_owned()
            }
            Refusal::NotServed(why) => format!("This file is not served: {why}"),
            Refusal::Failed => "The file could not be read; the server's log says why. Try again, or ask the operator.".to_owned(),
        }
    }
}

/// The time now, in Unix seconds, as links count it.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `at` (Unix seconds) as people read it, in UTC.
pub(super) fn date(at: u64) -> String {
    i64::try_from(at)
        .ok()
        .and_then(|at| chrono::DateTime::from_timestamp(at, 0))
        .map_or_else(
            || format!("Unix time {at}"),
            |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

/// The 32 hex digits of a pin's identity digest (its text is `path [file HEX]`).
fn identity(pin: &Pin) -> String {
    let text = pin.to_string();
    text.rsplit_once(" [file ")
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .unwrap_or_default()
        .to_owned()
}

/// The decoded `name=value` pairs of a query string.
fn url_fields(query: &str) -> impl Iterator<Item = (String, String)> {
    query.split('&').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        let decode = |s: &str| percent_decode_str(s).decode_utf8().ok().map(String::from);
        Some((decode(name)?, decode(value)?))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex digits back to bytes; `None` for anything else.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::{os::unix::fs::symlink, path::PathBuf};

    use super::*;

    const REPORT: &[u8] = b"id,total\n1,1999\n";
    const OUTSIDE: &str = "not yours\n";

    struct World {
        _dir: tempfile::TempDir,
        root: PathBuf,
        sandbox: Sandbox,
        links: Links,
    }

    /// A sandbox with `report.csv`, and `outside.txt` beside its root.
    fn world() -> World {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("files");
        std::fs::create_dir_all(&root).expect("root");
        std::fs::write(root.join("report.csv"), REPORT).expect("report");
        std::fs::write(dir.path().join("outside.txt"), OUTSIDE).expect("outside");
        World {
            sandbox: Sandbox::new(&root).expect("sandbox"),
            links: Links::new("http://127.0.0.1:9").expect("links"),
            root,
            _dir: dir,
        }
    }

    impl World {
        fn entry(&self, path: &str) -> Entry {
            match self.sandbox.resolve(path).expect("resolves") {
                Lookup::File(entry) => entry,
                Lookup::Missing(_) => panic!("{path} is missing"),
            }
        }

        /// What the endpoint answers `link` with at `now`.
        fn open(&self, link: &str, now: u64) -> Result<Vec<u8>, Refusal> {
            let (path, query) = link
                .split_once(PREFIX)
                .and_then(|(_, rest)| rest.split_once('?'))
                .expect("a link");
            self.links.open(&self.sandbox, path, query, now)
        }
    }

    /// A link to any path, signed with the key: what no request without it can make.
    fn signed(links: &Links, raw_path: &str, path: &str, pin: &str) -> String {
        let sig = hex(&links.mac(path, 2000, pin).finalize().into_bytes());
        format!(
            "{}{PREFIX}{raw_path}?expires=2000&pin={pin}&sig={sig}",
            links.base()
        )
    }

    #[test]
    fn a_link_opens_its_file_until_it_expires() {
        let world = world();
        let link = world.links.link(&world.entry("report.csv"), 1000);
        assert!(
            link.starts_with("http://127.0.0.1:9/download/report.csv?expires=1000&pin="),
            "{link}"
        );
        assert_eq!(world.open(&link, 999).as_deref(), Ok(REPORT));
        for now in [1000, 5000] {
            let expired = world.open(&link, now).expect_err("expired");
            assert_eq!(expired, Refusal::Expired(1000));
            assert_eq!(expired.status(), 410);
            assert!(
                expired
                    .text()
                    .contains("expired at 1970-01-01 00:16:40 UTC"),
                "{}",
                expired.text()
            );
        }
    }

    #[test]
    fn an_altered_link_or_another_key_is_not_signed() {
        let world = world();
        std::fs::write(world.root.join("other.csv"), "other\n").expect("other");
        let link = world.links.link(&world.entry("report.csv"), 1000);
        let sig = link.rsplit_once("sig=").expect("sig").1;
        let flipped = if sig.ends_with('0') { "1" } else { "0" };
        let pin = link.split("pin=").nth(1).expect("pin");
        let pin = &pin[..32];
        for altered in [
            format!("{}{flipped}", &link[..link.len() - 1]),
            link.replace("expires=1000", "expires=9000"),
            link.replace(pin, &"0".repeat(32)),
            link.replace("report.csv", "other.csv"),
            link.replace("report.csv", "./report.csv"),
            link.replace(&format!("&sig={sig}"), ""),
            link.replace(sig, &sig.to_uppercase()),
        ] {
            let refused = world.open(&altered, 999).expect_err(&altered);
            assert_eq!(refused, Refusal::NotSigned, "{altered}");
            assert_eq!(refused.status(), 403);
        }
        // The same link under another process's key.
        let other = Links::new(world.links.base()).expect("links");
        let (path, query) = link
            .split_once(PREFIX)
            .and_then(|(_, rest)| rest.split_once('?'))
            .expect("a link");
        assert_eq!(
            other.open(&world.sandbox, path, query, 999),
            Err(Refusal::NotSigned)
        );
    }

    #[test]
    fn a_replaced_or_removed_file_is_refused() {
        let world = world();
        let link = world.links.link(&world.entry("report.csv"), 1000);
        std::fs::remove_file(world.root.join("report.csv")).expect("removed");
        std::fs::write(world.root.join("report.csv"), "id,total\n1,0\n").expect("replaced");
        assert_eq!(world.open(&link, 999), Err(Refusal::Changed));
        std::fs::remove_file(world.root.join("report.csv")).expect("removed");
        let gone = world.open(&link, 999).expect_err("gone");
        assert_eq!((gone.clone(), gone.status()), (Refusal::Gone, 404));
    }

    #[test]
    fn signed_paths_outside_the_sandbox_are_never_served() {
        let world = world();
        symlink(world.root.join("../outside.txt"), world.root.join("out")).expect("link out");
        let pin = "0".repeat(32);
        for (raw, path) in [
            ("../outside.txt", "../outside.txt"),
            ("%2e%2e/outside.txt", "../outside.txt"),
            ("%2E%2E%2Foutside.txt", "../outside.txt"),
            ("/etc/passwd", "/etc/passwd"),
            ("out", "out"),
        ] {
            let link = signed(&world.links, raw, path, &pin);
            let refused = world.open(&link, 999).expect_err(&link);
            assert!(
                matches!(refused, Refusal::NotServed(_)),
                "{link}: {refused:?}"
            );
            assert_eq!(refused.status(), 403);
            assert!(!refused.text().contains(OUTSIDE), "{}", refused.text());
        }
    }
}
