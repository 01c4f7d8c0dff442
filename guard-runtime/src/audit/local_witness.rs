//! A witness serving on loopback from this process, for demos and tests: its own key (kept
//! in a file of its own), its own state file, and the policy that trusts it. In production
//! a witness is `guard-audit witness`, run by someone the log's operator does not control;
//! one in the same process shows the protocol, not independence.

use std::{path::Path, sync::Arc};

use super::{
    AuditLog, CheckpointVerifier, Policy, Verified, Witness, WitnessSigner, Witnessed,
    fetch_checkpoint, serve_witness,
};

/// The witness's name in the policy it writes.
const NAME: &str = "local-witness";

/// A witness of one log, serving until [`stop`](Self::stop) or drop.
pub struct LocalWitness {
    url: String,
    origin: String,
    policy: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<()>>,
}

impl LocalWitness {
    /// Starts a witness of the log named `origin` whose checkpoints `log_key` checks, on a
    /// free loopback port. Its key is `key` (made on first use, owner-only), its state
    /// `state` (what it cosigned, so a later run refuses a shorter or different history):
    /// made on first use too, when neither it nor its record (`<state>.cosigned`) exists; a
    /// state missing beside its record, emptied or older than it is refused.
    pub async fn start(
        origin: &str,
        log_key: &CheckpointVerifier,
        key: &Path,
        state: &Path,
    ) -> Result<Self, String> {
        let signer = WitnessSigner::from_file_or_generate(key, "witness.localhost/guard")?;
        let witness_key = signer.verifier().to_text();
        if state.symlink_metadata().is_err() {
            Witness::init(state)?;
        }
        let witness = Witness::open(signer, vec![(origin.to_owned(), log_key.clone())], state)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot start a local witness: {e}"))?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(serve_witness(Arc::new(witness), listener, async {
            let _ = stopped.await;
        }));
        let policy = format!(
            "# the log's key, its witness, and one cosignature required\nlog {}\nwitness {NAME} {witness_key} {url}\nquorum {NAME}\n",
            log_key.to_text()
        );
        Ok(Self {
            url,
            origin: origin.to_owned(),
            policy,
            stop: Some(stop),
            serving: Some(serving),
        })
    }

    /// Where checkpoints are submitted.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A C2SP tlog-policy trusting the log's key and this witness, one cosignature
    /// required: for [`Anchor::new`](super::Anchor::new), and for `guard-audit --policy`.
    pub fn policy_text(&self) -> &str {
        &self.policy
    }

    /// [`policy_text`](Self::policy_text), parsed.
    pub fn policy(&self) -> Policy {
        Policy::parse(&self.policy).expect("the policy this witness wrote reads back")
    }

    /// `log` verified against the checkpoint this witness cosigned last, opened under its
    /// policy: refused when the witness has cosigned nothing yet, when the log does not match
    /// the checkpoint, and when records come after it (they are not anchored).
    pub async fn verify(&self, log: &AuditLog) -> Result<(Verified, Witnessed), String> {
        let note = fetch_checkpoint(&self.url, &self.origin)
            .await?
            .ok_or("the witness has cosigned no checkpoint of this log")?;
        let witnessed = self.policy().open(&note).map_err(|e| e.to_string())?;
        let verified = log
            .verify(Some(&witnessed.checkpoint))
            .await
            .map_err(|e| e.to_string())?;
        if verified.records != witnessed.checkpoint.size {
            return Err(format!(
                "{} records come after the witnessed checkpoint (tree size {}): they are not anchored",
                verified.records - witnessed.checkpoint.size,
                witnessed.checkpoint.size
            ));
        }
        Ok((verified, witnessed))
    }

    /// Stops serving and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            let _ = serving.await;
        }
    }
}

impl Drop for LocalWitness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl std::fmt::Debug for LocalWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalWitness")
            .field("url", &self.url)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}
