//! The request context of work guard does with no client: a runner's deferred calls and
//! purges of undo windows. A hidden route (see `hidden`) is called with a request context,
//! and a runner has none of a client's to give; this one is honest about that: its peer is
//! served over a transport that is closed from the start, so anything the work would send
//! a client (a question, a notification) fails rather than reach anyone.

use rmcp::{
    RoleServer, ServerHandler,
    model::NumberOrString,
    service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage, serve_directly},
    transport::Transport,
};

/// The server side of a connection to no one; it is never asked anything.
struct Nobody;

impl ServerHandler for Nobody {}

/// A transport closed from the start: it receives nothing, and sends nothing.
struct Closed;

impl Transport<RoleServer> for Closed {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Err(std::io::ErrorKind::NotConnected.into()))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A request context whose peer reaches no one: rmcp makes a peer only for a served
/// connection, so this serves one over [`Closed`] and cancels it at once; the peer it
/// leaves behind has no connection to send on. Must run inside a tokio runtime.
pub(crate) fn request() -> RequestContext<RoleServer> {
    let running = serve_directly(Nobody, Closed, None);
    let peer = running.peer().clone();
    running.cancellation_token().cancel();
    RequestContext::new(NumberOrString::Number(0), peer)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_runners_context_reaches_no_one() {
        let request = super::request();
        let told = request.peer.notify_tool_list_changed().await;
        assert!(told.is_err(), "a notification reached someone");
        assert!(
            request.peer.peer_info().is_none(),
            "no client introduced itself"
        );
    }
}
