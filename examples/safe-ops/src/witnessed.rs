//! The demo's last scene: its audit log anchored with a witness, and verified against the
//! checkpoint the witness cosigned.
//!
//! The keys live under the user's configuration directory (`$XDG_CONFIG_HOME/safe-ops/audit`,
//! else `~/.config/safe-ops/audit`), made on the first run and kept: the log's signer key
//! never sits beside the database it signs for. The witness has its own key and its own
//! state file and answers on loopback over the C2SP tlog-witness API; in production it is
//! `guard-audit witness`, run by someone the database's owner does not control.

use std::path::Path;

use rmcp_guard::{
    audit::{Anchor, AuditLog, CheckpointSigner, LocalWitness},
    user_dirs::UserDirs,
};

/// The demo log's name in its checkpoints.
pub const ORIGIN: &str = "safe-ops demo";

/// Checkpoints `log`, has a witness cosign it, and verifies the log against the checkpoint
/// the witness serves, printing the commands that do the same offline.
pub async fn verify_log(workspace: &Path, log: &AuditLog) -> Result<(), String> {
    let keys = UserDirs::new("safe-ops")?.config().join("audit");
    let signer = CheckpointSigner::from_file_or_generate(&keys.join("log.key"), "safe-ops-demo")?;
    // The witness: its own key, its own state, its own port.
    let witness = LocalWitness::start(
        ORIGIN,
        &signer.verifier(),
        &keys.join("witness.key"),
        &workspace.join("witness-state.json"),
    )
    .await?;
    let policy_path = workspace.join("policy.txt");
    std::fs::write(&policy_path, witness.policy_text()).map_err(|e| e.to_string())?;

    let anchor = Anchor::new(log.clone(), signer, &witness.policy())?;
    let anchored = anchor.checkpoint().await.map_err(|e| e.to_string())?;
    if let Some(error) = anchor.status().into_iter().find_map(|s| s.error) {
        return Err(format!("the demo's witness did not cosign: {error}"));
    }
    let checked = witness.verify(log).await;
    witness.stop().await;
    let (verified, witnessed) = checked.map_err(|e| format!("FAILED: {e}"))?;

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
    println!(
        "OK: {verified} (checkpoint: cosigned by {}, tree size {})",
        witnessed.cosigned_by.join(", "),
        witnessed.checkpoint.size
    );
    Ok(())
}
