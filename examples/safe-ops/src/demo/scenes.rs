//! The scenes of one era: every outcome of every tool, each undoable effect undone within
//! its window.

use rmcp::model::ProtocolVersion;
use rmcp_guard_test::testing::Answer;
use serde_json::json;

use super::{Scene, Step};

/// The scenes of `protocol`'s era, in order.
pub(super) fn steps(protocol: &ProtocolVersion) -> Vec<Step> {
    let accept = Answer::Accept;
    // Each era deletes one file on accept; the refusals before it target the same file.
    let file = if *protocol == ProtocolVersion::V_2025_11_25 {
        "old.log"
    } else {
        "report.csv"
    };
    let scenes = vec![
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: accept(json!({"confirm": "true"})),
            title: "invalid form: the string \"true\" is not a ticked box",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: accept(json!({"confirm": false})),
            title: "box left unticked",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": "../../etc/passwd"}),
            answer: Answer::Cancel,
            title: "a path that escapes the sandbox",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: accept(json!({"typed_name": "Customers", "approver": "ada"})),
            title: "wrong typed name",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: accept(json!({"typed_name": "customers"})),
            title: "invalid form: approver missing",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(json!({"approval_level": "urgent", "rollback_plan": "revert"})),
            title: "business rule: urgent needs a 10-character rollback plan",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(json!({"approval_level": "asap", "rollback_plan": "redeploy v41"})),
            title: "invalid form: not an offered approval level",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(
                json!({"approval_level": "urgent", "rollback_plan": "redeploy v41 from the registry"}),
            ),
            title: "accept",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing", "environment": "production"}),
            answer: Answer::Cancel,
            title: "production is not deploy's: it names deploy_production",
        },
    ];
    let mut steps: Vec<Step> = scenes.into_iter().map(Step::Call).collect();
    // Accepts that remove something run last in each era, once per era; each era undoes one.
    let accept_scene = |tool, args, answer, title| {
        Step::Call(Scene {
            tool,
            args,
            answer: accept(answer),
            title,
        })
    };
    if *protocol == ProtocolVersion::V_2025_11_25 {
        steps.extend([
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": ["a.tmp", "c.tmp"]}),
                "batch: the human picks two of the three matching files",
            ),
            accept_scene(
                "delete_file",
                json!({"path": "old.log"}),
                json!({"confirm": true, "reason": "rotated"}),
                "accept",
            ),
            Step::UndoLast("the delete, within its window"),
            accept_scene(
                "drop_table",
                json!({"table": "orders"}),
                json!({"typed_name": " orders ", "approver": "ada"}),
                "accept (outer spaces are trimmed)",
            ),
            Step::UndoLast("the drop, within its window: every row comes back"),
        ]);
    } else {
        steps.extend([
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": ["a.tmp"]}),
                "batch: a pick that was not offered (a.tmp is gone) is refused",
            ),
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": []}),
                "batch: nothing picked, nothing changed",
            ),
            accept_scene(
                "delete_file",
                json!({"path": "report.csv"}),
                json!({"confirm": true}),
                "accept",
            ),
            Step::UndoLast("the delete, within its window"),
            Step::UndoLast("twice: the first result, nothing runs again"),
            accept_scene(
                "delete_file",
                json!({"path": "old.log"}),
                json!({"confirm": true}),
                "accept, not undone",
            ),
            Step::Call(Scene {
                tool: "delete_file",
                args: json!({"path": "old.log"}),
                answer: Answer::Cancel,
                title: "precondition: the file is already gone, nobody is asked",
            }),
            accept_scene(
                "drop_table",
                json!({"table": "customers"}),
                json!({"typed_name": "customers", "approver": "grace"}),
                "accept, not undone",
            ),
        ]);
    }
    steps
}
