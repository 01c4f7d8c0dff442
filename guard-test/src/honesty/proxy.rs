//! A byte-forwarding proxy between an in-process client and server. It watches the JSON-RPC
//! lines that pass, so the kit knows when the server has received a `tools/call`, can cut
//! the client off right after that, and can hold concurrent calls until all have arrived.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream},
    sync::{Notify, watch},
    task::JoinHandle,
};

const BUFFER: usize = 1 << 20;

/// What the server did after the watched `tools/call` arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Reaction {
    /// It answered; the response (the `result` or `error` member) never reached the client
    /// when the client had been cut off.
    Answered(Value),
    /// It sent `elicitation/create`: it is waiting for a human.
    Asked,
}

/// Holds `tools/call` requests until every party has sent its n-th one, so concurrent
/// calls reach the server together. A party that finished no longer holds anyone up.
pub struct Gate {
    parties: usize,
    state: Mutex<(HashMap<usize, usize>, usize)>,
    notify: Notify,
}

impl Gate {
    /// A gate that opens when `parties` callers wait at it.
    pub fn new(parties: usize) -> Arc<Self> {
        Arc::new(Self {
            parties,
            state: Mutex::new((HashMap::new(), 0)),
            notify: Notify::new(),
        })
    }

    fn ready(&self, round: usize) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0.get(&round).copied().unwrap_or(0) + state.1 >= self.parties
    }

    async fn pass(&self, round: usize) {
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            *state.0.entry(round).or_default() += 1;
        }
        self.notify.notify_waiters();
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.ready(round) {
                return;
            }
            notified.await;
        }
    }

    /// A party is done and will send nothing more.
    pub fn leave(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 += 1;
        self.notify.notify_waiters();
    }
}

/// One proxied connection to a server.
pub struct Link {
    /// The server's serve task: it ends once the server saw its input close and finished
    /// (or gave up on) the requests in flight.
    pub server: JoinHandle<()>,
    call: watch::Receiver<bool>,
    reaction: watch::Receiver<Option<Reaction>>,
    close_server: Arc<Notify>,
}

impl Link {
    /// Serves `server` behind a proxy and returns the client's end of the connection.
    /// With `cut_after_call`, nothing passes in either direction once the first
    /// `tools/call` has been forwarded to the server, as if the client's connection broke
    /// right then; the server's side stays open until [`Link::close_server`].
    pub fn open<S>(server: S, gate: Option<Arc<Gate>>, cut_after_call: bool) -> (DuplexStream, Self)
    where
        S: ServerHandler + Send + Sync + 'static,
    {
        let (client_end, proxy_client) = tokio::io::duplex(BUFFER);
        let (proxy_server, server_end) = tokio::io::duplex(BUFFER);
        let server = tokio::spawn(async move {
            if let Ok(running) = server.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        let (call_tx, call) = watch::channel(false);
        let (reaction_tx, reaction) = watch::channel(None);
        let close_server = Arc::new(Notify::new());
        let cut = Arc::new(AtomicBool::new(false));
        let (client_read, mut client_write) = tokio::io::split(proxy_client);
        let (server_read, mut server_write) = tokio::io::split(proxy_server);

        // The watched call's id, known before its line is written, so the server's answer
        // can never overtake it.
        let call_id: Arc<Mutex<Option<Value>>> = Arc::default();

        let upstream_cut = cut.clone();
        let upstream_close = close_server.clone();
        let upstream_id = call_id.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(client_read);
            let mut round = 0usize;
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let message: Option<Value> = serde_json::from_slice(&line).ok();
                let is_call = message
                    .as_ref()
                    .is_some_and(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"));
                if is_call && let Some(gate) = &gate {
                    gate.pass(round).await;
                    round += 1;
                }
                let first_call = is_call && {
                    let mut slot = upstream_id.lock().unwrap_or_else(|p| p.into_inner());
                    let first = slot.is_none();
                    if first {
                        *slot = message.as_ref().and_then(|m| m.get("id").cloned());
                    }
                    first
                };
                if first_call && cut_after_call {
                    // From here on the client hears nothing back.
                    upstream_cut.store(true, Ordering::SeqCst);
                }
                if server_write.write_all(&line).await.is_err()
                    || server_write.flush().await.is_err()
                {
                    break;
                }
                if first_call {
                    let _ = call_tx.send(true);
                    if cut_after_call {
                        upstream_close.notified().await;
                        break;
                    }
                }
            }
            // The client is gone (or cut off): the server sees its input end.
            let _ = server_write.shutdown().await;
        });

        tokio::spawn(async move {
            let mut lines = BufReader::new(server_read);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if let Ok(message) = serde_json::from_slice::<Value>(&line) {
                    let watched = call_id.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Some(id) = watched {
                        let reaction = if message.get("method").and_then(Value::as_str)
                            == Some("elicitation/create")
                        {
                            Some(Reaction::Asked)
                        } else if message.get("method").is_none() && message.get("id") == Some(&id)
                        {
                            Some(Reaction::Answered(
                                message
                                    .get("result")
                                    .or_else(|| message.get("error"))
                                    .cloned()
                                    .unwrap_or(Value::Null),
                            ))
                        } else {
                            None
                        };
                        if let Some(reaction) = reaction {
                            reaction_tx.send_if_modified(|slot| {
                                if slot.is_none() {
                                    *slot = Some(reaction);
                                    true
                                } else {
                                    false
                                }
                            });
                        }
                    }
                }
                // Once cut, keep draining so the server never blocks on a full pipe.
                if !cut.load(Ordering::SeqCst)
                    && (client_write.write_all(&line).await.is_err()
                        || client_write.flush().await.is_err())
                {
                    // The client left; keep draining the server.
                    cut.store(true, Ordering::SeqCst);
                }
            }
            let _ = client_write.shutdown().await;
        });

        (
            client_end,
            Self {
                server,
                call,
                reaction,
                close_server,
            },
        )
    }

    /// Waits until the first `tools/call` has been forwarded to the server.
    pub async fn call_received(&mut self) -> bool {
        self.call.wait_for(|forwarded| *forwarded).await.is_ok()
    }

    /// Waits until the server answered the watched call or asked the human.
    pub async fn server_reacted(&mut self) -> Option<Reaction> {
        self.reaction
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|r| r.clone())
    }

    /// For a link opened with `cut_after_call`: ends the server's input.
    pub fn close_server(&self) {
        self.close_server.notify_one();
    }
}
