// A deferred run builds its proof from a `Due`, which only guard's runner hands to the run a
// tool registered, for a call it claimed when the database's clock said it was due: code
// cannot get one to mint a `Confirmed` through `__private::RunFlow`.
use rmcp_guard::{
    Confirmed, Guard, Preview,
    __private::{ConfirmKind, RunFlow, ToolSpec},
    defer::Ending,
    forms::Checkbox,
};

static SPEC: ToolSpec = ToolSpec {
    name: "close_account",
    confirm: ConfirmKind::Checkbox,
    message: None,
    timeout: None,
    on_decline: None,
    on_cancel: None,
    approval: None,
    undo_within: None,
    defer: None,
    grant: None,
};

fn handler(_proof: Confirmed<Checkbox>) -> Ending {
    Ending::Failed {
        reason: String::new(),
    }
}

async fn mint(guard: &Guard) {
    let calls = guard.deferred_calls().expect("a store");
    let _ = calls
        .run_due(i64::MAX, |due| async move {
            let flow = RunFlow::<Checkbox>::new(due, &SPEC);
            match flow.confirm(Ok(Preview::effect("checking", "Close checking.")), None, None) {
                Ok(proof) => handler(proof),
                Err(ending) => ending,
            }
        })
        .await;
}

fn main() {
    let _ = mint;
}
