//! A [`Witness`] over HTTP/1.1, as `c2sp.org/tlog-witness` lays out its API:
//! `POST /add-checkpoint` answers a cosignature or the refusal's status, and
//! `GET /<sha256(origin) hex>/checkpoint` the last checkpoint cosigned for that log.
//! `guard-audit witness` serves one as its own process; a demo may serve one in process.

use std::{convert::Infallible, future::Future, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header};
use hyper_util::rt::TokioIo;

use crate::witness::Witness;

/// The largest request body read.
const MAX_BODY: usize = 64 * 1024;

/// Serves `witness` on `listener` until `shutdown` completes.
pub async fn serve_witness(
    witness: Arc<Witness>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(target: "guard::audit", %error, "the witness could not accept a connection");
                    continue;
                }
            },
        };
        let witness = witness.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let witness = witness.clone();
                async move { Ok::<_, Infallible>(answer(&witness, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(witness: &Witness, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    match (request.method(), path.as_str()) {
        (&Method::POST, "/add-checkpoint") => {
            let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "the request is too large\n"),
            };
            let Ok(body) = std::str::from_utf8(&body) else {
                return text(StatusCode::BAD_REQUEST, "the request is not UTF-8\n");
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            match witness.add_checkpoint(body, now) {
                Ok(line) => text(StatusCode::OK, &line),
                Err(refusal) => {
                    let status = StatusCode::from_u16(refusal.status)
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    let mut response = text(status, &refusal.body);
                    if refusal.status == 409 {
                        response.headers_mut().insert(
                            header::CONTENT_TYPE,
                            header::HeaderValue::from_static("text/x.tlog.size"),
                        );
                    }
                    response
                }
            }
        }
        (&Method::GET, _) => match path
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix("/checkpoint"))
            .and_then(|origin| witness.latest(origin))
        {
            Some(note) => text(StatusCode::OK, &note),
            None => text(
                StatusCode::NOT_FOUND,
                "this witness has cosigned no checkpoint of that log\n",
            ),
        },
        _ => text(
            StatusCode::NOT_FOUND,
            "a witness answers POST /add-checkpoint and GET /<origin hash>/checkpoint\n",
        ),
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
