//! The demo's last scene: its audit log anchored with a witness, and verified against the
//! checkpoint the witness cosigned.
//!
//! The keys live under the user's configuration directory (`$XDG_CONFIG_HOME/safe-ops/audit`,
//! else `~/.config/safe-ops/audit`), made on the first run and kept: the log's signer key
//! never sits beside the database it signs for. The witness has its own key and its own
//! state file and answers on loopback over the C2SP tlog-witness API; in production it is
//! `guard-audit witness`, run by someone the database's owner does not control.

use std::{path::Path, sync::Arc};

use rmcp_guard::{
    audit::{
        Anchor, AuditLog, CheckpointSigner, Policy, Witness, WitnessSigner, fetch_checkpoint,
        serve_witness,
    },
    user_dirs::{UserDirs, install_default},
};

/// The demo log's name in its checkpoints.
pub const ORIGIN: &str = "safe-ops demo";

/// The key in `dir/file`, made by `make` on the first run and read back after.
fn key<T>(
    dir: &Path,
    file: &str,
    make: impl FnOnce() -> Result<String, String>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, String> {
    let path = dir.join(file);
    if install_default(&path, &make()?)? {
        // A secret key: readable by its owner only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
        }
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Checkpoints `log`, has a witness cosign it, and verifies the log against the checkpoint
/// the witness serves, printing the commands that do the same offline.
pub async fn verify_log(workspace: &Path, log: &AuditLog) -> Result<(), String> {
    let keys = UserDirs::new("safe-ops")?.config().join("audit");
    // Only the user reaches the keys' directory, so a key is never readable while it is made.
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&keys)
        .map_err(|e| format!("cannot create {}: {e}", keys.display()))?;
    let signer = key(
        &keys,
        "log.key",
        || {
            Ok(CheckpointSigner::generate("safe-ops-demo")
                .map_err(|e| e.to_string())?
                .to_text())
        },
        |t| CheckpointSigner::parse(t).map_err(|e| e.to_string()),
    )?;
    let witness_signer = key(
        &keys,
        "witness.key",
        || {
            Ok(WitnessSigner::generate("witness.localhost/safe-ops-demo")
                .map_err(|e| e.to_string())?
                .to_text())
        },
        |t| WitnessSigner::parse(t).map_err(|e| e.to_string()),
    )?;
    let witness_key = witness_signer.verifier();

    // The witness: its own key, its own state, its own port.
    let witness = Witness::open(
        witness_signer,
        vec![(ORIGIN.to_owned(), signer.verifier())],
        &workspace.join("witness-state.json"),
    )?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot start the demo's witness: {e}"))?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve_witness(Arc::new(witness), listener, async {
        let _ = stopped.await;
    }));

    let policy_text = format!(
        "# the demo's log key, its witness, and one cosignature required\nlog {}\nwitness demo-witness {} {url}\nquorum demo-witness\n",
        signer.verifier().to_text(),
        witness_key.to_text()
    );
    let policy = Policy::parse(&policy_text).map_err(|e| e.to_string())?;
    let policy_path = workspace.join("policy.txt");
    std::fs::write(&policy_path, &policy_text).map_err(|e| e.to_string())?;

    let anchor = Anchor::new(log.clone(), signer, &policy)?;
    let anchored = anchor.checkpoint().await.map_err(|e| e.to_string())?;
    if let Some(error) = anchor.status().into_iter().find_map(|s| s.error) {
        return Err(format!("the demo's witness did not cosign: {error}"));
    }
    let served = fetch_checkpoint(&url, ORIGIN)
        .await?
        .ok_or("the demo's witness serves no checkpoint of the log")?;
    let _ = stop.send(());
    let _ = serving.await;
    let witnessed = policy.open(&served).map_err(|e| e.to_string())?;

    println!("══ Audit ══\n");
    println!(
        "Every outcome above, and each confirmation before its effect ran, is one record of a"
    );
    println!(
        "tamper-evident log (audit.db). A checkpoint of its {} records was signed with the log key",
        anchored.size
    );
    println!("kept in {}, and cosigned by a witness", keys.display());
    println!(
        "with its own key and state, which will never cosign a shorter or different history of"
    );
    println!("this log. Anyone can check it offline:\n");
    println!(
        "$ guard-audit verify --db {} --policy {}",
        workspace.join("audit.db").display(),
        policy_path.display()
    );
    println!(
        "$ guard-audit receipt --db {} TRACE_ID --policy {}",
        workspace.join("audit.db").display(),
        policy_path.display()
    );
    match log.verify(Some(&witnessed.checkpoint)).await {
        Ok(verified) if verified.records == witnessed.checkpoint.size => {
            println!(
                "OK: {verified} (checkpoint: cosigned by {}, tree size {})",
                witnessed.cosigned_by.join(", "),
                witnessed.checkpoint.size
            );
            Ok(())
        }
        Ok(verified) => Err(format!(
            "FAILED: {} records are past the witnessed checkpoint",
            verified.records - witnessed.checkpoint.size
        )),
        Err(error) => Err(format!("FAILED: {error}")),
    }
}
