//! A grant instead of a question per file: opened, used up, opened again and revoked.

use std::path::Path;

use rmcp::model::ProtocolVersion;
use rmcp_guard::{
    grant::{Revoked, Revoker},
    ops::SqliteStore,
    person::Person,
};
use rmcp_guard_test::testing::Answer;
use serde_json::json;

use super::{Scene, guard, play};

/// The files in `logs/` the grant's scenes delete: one that opens the grant, five it
/// covers, one after it is used up that opens another, and one after that is revoked.
pub(super) const GRANTED_LOGS: usize = 8;

/// A grant instead of a question per file: alice deletes `logs/1.log` and grants up to five
/// more deletes in `logs/` for ten minutes; those five run unasked and say so; the sixth
/// asks again (the grant is used up) and she grants again; she revokes that grant, and the
/// next delete asks again.
pub(super) async fn grants(root: &Path, db_path: &Path, store: &SqliteStore) -> Result<(), String> {
    println!("══ A grant instead of a question per file ══\n");
    let era = ProtocolVersion::V_2025_11_25;
    let delete = |n: usize, answer: Answer, title: &'static str| Scene {
        tool: "delete_file",
        args: json!({"path": format!("logs/{n}.log")}),
        answer,
        title,
    };
    let grant = || Answer::Accept(json!({"confirm": true, "guard_grant": "grant"}));
    let scene = delete(
        1,
        grant(),
        "accept, and grant up to 5 more deletes in logs/",
    );
    play(root, db_path, store, &era, scene).await?;
    for n in 2..=6 {
        let scene = delete(n, Answer::Cancel, "covered by the grant: nobody is asked");
        play(root, db_path, store, &era, scene).await?;
    }
    let scene = delete(
        7,
        grant(),
        "the grant is used up: asked again, and granted again",
    );
    play(root, db_path, store, &era, scene).await?;

    let guard = guard(store)?;
    let grants = guard.grants().ok_or("the demo's guard keeps no grants")?;
    let alice = Person::new("demo", "alice").map_err(|e| e.to_string())?;
    let now = rmcp_guard::ops::now_ms();
    let held = grants
        .held_by(&alice, now, 10)
        .await
        .map_err(|e| e.to_string())?;
    let open = held
        .iter()
        .find(|g| g.active_at(now))
        .ok_or("alice holds no grant that covers calls")?;
    let revoked = grants
        .revoke(&open.grant_id, Revoker::Holder(&alice), now, "demo-revoke")
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "── revoke · alice revokes the new grant (her approval inbox lists it, with a Revoke button)"
    );
    match revoked {
        Revoked::Now(grant) => println!(
            "   revoked       {}: it covers no call from now on ({} of {} used)\n",
            grant.grant_id, grant.used, grant.calls
        ),
        other => return Err(format!("the grant was not revoked now: {other:?}")),
    }
    guard.audit_settled().await;
    let scene = delete(
        8,
        Answer::Decline,
        "after the revocation: asked again, and declined",
    );
    play(root, db_path, store, &era, scene).await?;
    Ok(())
}
