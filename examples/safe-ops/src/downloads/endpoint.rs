//! The HTTP endpoint the links point at: `GET /download/PATH?expires=...&pin=...&sig=...` on
//! a loopback listener of its own, answering 200 with the file's bytes or a status with a
//! sentence saying why not ([`Refusal`]).

use std::net::SocketAddr;

use axum::{
    Router,
    extract::{OriginalUri, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use super::link::{self, Links, PREFIX, Refusal};
use crate::sandbox::Sandbox;

/// Starts serving links to files of `sandbox` on `addr` (loopback only; port 0 picks a free
/// one) and returns the links it serves, under a key made now.
pub async fn serve(addr: SocketAddr, sandbox: Sandbox) -> Result<Links, String> {
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--downloads {addr}: safe-ops serves download links on loopback only (127.0.0.1 or [::1])"
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} for download links: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot tell where the download listener is: {e}"))?;
    let links = Links::new(&format!("http://{bound}"))?;
    let app = Router::new()
        .route("/download/{*path}", get(download))
        .with_state((links.clone(), sandbox));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "the download link endpoint stopped");
        }
    });
    Ok(links)
}

async fn download(
    State((links, sandbox)): State<(Links, Sandbox)>,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let raw_path = uri.path().strip_prefix(PREFIX).unwrap_or_default();
    let now = link::now();
    // Reading is blocking file I/O of up to 16 MiB: off the async workers.
    let (raw_path, query) = (
        raw_path.to_owned(),
        uri.query().unwrap_or_default().to_owned(),
    );
    let opened =
        tokio::task::spawn_blocking(move || links.open(&sandbox, &raw_path, &query, now)).await;
    let no_store = (header::CACHE_CONTROL, "no-store");
    match opened {
        Ok(Ok(bytes)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CONTENT_DISPOSITION, "attachment"),
                no_store,
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(refusal)) => refused(&refusal),
        Err(error) => {
            tracing::warn!(%error, "a download link's read did not finish");
            refused(&Refusal::Failed)
        }
    }
}

fn refused(refusal: &Refusal) -> Response {
    let status =
        StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        refusal.text() + "\n",
    )
        .into_response()
}
