//! A visitor of the approval page over plain HTTP, for the demo: the page's visible text as a
//! person reads it, and the decisions a person posts from it (the page's own form: its CSRF
//! token, its origin); and of download links. Loopback `http://` URLs only.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

/// A page as loaded: the HTTP status and the HTML.
pub struct Page {
    pub status: u16,
    pub html: String,
}

impl Page {
    /// The text a person reads on it, one block per line.
    pub fn text(&self) -> String {
        visible_text(&self.html)
    }

    /// The value of the hidden field `name`, if the page has the form.
    pub fn field(&self, name: &str) -> Option<String> {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.html.find(&marker)? + marker.len();
        let len = self.html[start..].find('"')?;
        Some(unescape(&self.html[start..start + len]))
    }
}

/// Loads `url`.
pub async fn get(url: &str) -> Result<Page, String> {
    exchange(url, "GET", None).await
}

/// Approves on the page at `url`, typing `typed`, as its form does.
pub async fn approve(url: &str, typed: &str) -> Result<Page, String> {
    decide(url, &[("decision", "approve"), ("typed", typed)]).await
}

/// Rejects (or, for the requester, withdraws) on the page at `url`.
pub async fn reject(url: &str) -> Result<Page, String> {
    decide(url, &[("decision", "reject")]).await
}

async fn decide(url: &str, fields: &[(&str, &str)]) -> Result<Page, String> {
    let page = get(url).await?;
    let csrf = page
        .field("csrf")
        .ok_or_else(|| format!("the page at {url} offers no decision: {}", page.text()))?;
    let mut posted = vec![("csrf", csrf.as_str())];
    posted.extend_from_slice(fields);
    post(url, &posted).await
}

/// Posts `fields` to `url` from the page's own origin, exactly as given.
pub async fn post(url: &str, fields: &[(&str, &str)]) -> Result<Page, String> {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in fields {
        form.append_pair(name, value);
    }
    exchange(url, "POST", Some(form.finish())).await
}

async fn exchange(url: &str, method: &str, form: Option<String>) -> Result<Page, String> {
    let parsed = Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
    let host = parsed.host_str().unwrap_or_default();
    let port = parsed.port_or_known_default().unwrap_or(80);
    if parsed.scheme() != "http" {
        return Err(format!(
            "{url}: the visitor speaks plain http to loopback only"
        ));
    }
    let mut stream = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    let origin = parsed.origin().ascii_serialization();
    let mut request = format!(
        "{method} {} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n",
        &parsed[url::Position::BeforePath..url::Position::AfterQuery]
    );
    if let Some(form) = &form {
        request.push_str(&format!(
            "Origin: {origin}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ));
    } else {
        request.push_str("\r\n");
    }
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send to {url}: {e}"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .map_err(|e| format!("cannot read from {url}: {e}"))?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{url} answered no HTTP status: {head}"))?;
    Ok(Page {
        status,
        html: body.to_owned(),
    })
}

/// The page's text without markup: the head left out, block ends as line breaks, buttons
/// and input fields shown as `[Approve]` and `[____]`.
pub fn visible_text(html: &str) -> String {
    let body = html.split_once("<body>").map_or(html, |(_, body)| body);
    let mut out = String::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        out.push_str(&unescape(&rest[..open]));
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let tag = &rest[open + 1..open + close];
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or_default();
        match name {
            "h1" | "h2" | "p" | "li" | "dd" | "ul" | "section" | "label"
                if tag.starts_with('/') =>
            {
                out.push('\n');
            }
            "dt" if tag.starts_with('/') => out.push_str(": "),
            "button" if !tag.starts_with('/') => out.push('['),
            "button" => out.push_str("] "),
            "input" if !tag.contains("type=\"hidden\"") => out.push_str(" [____]\n"),
            _ => {}
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(&unescape(rest));
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
