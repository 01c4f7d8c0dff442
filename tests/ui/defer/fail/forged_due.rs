// A deferred run needs a `Due`, which only a runner builds after claiming a stored call:
// code cannot make one to reach the handler.
fn main() {
    let _due = rmcp_guard::__private::Due {
        call: rmcp_guard::defer::Deferred {
            operation_id: String::new(),
            tool: "close_account".into(),
            target: String::new(),
            created_at: 0,
            due_at: 1,
        },
        arguments: serde_json::Value::Null,
        form: serde_json::Value::Null,
        fingerprint: String::new(),
        trace_id: String::new(),
    };
}
