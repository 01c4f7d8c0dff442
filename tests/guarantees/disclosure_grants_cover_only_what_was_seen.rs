//! Grants on disclosing tools, on both protocol eras: the offer states the scope, the class
//! and the per-call caps the human agrees to; a grant shows later data within them unasked
//! and says so; the caps, per call and per session, still hold under a grant and a refused
//! call spends none of it; and a tool whose declaration discloses more (another class, a
//! higher cap), or a call read as another account, is not covered by a grant opened on the
//! old one, even under the same name and in the same store. safe-ops' `read_build_log`, and
//! a log reader declared three ways here.

use std::sync::Arc;

use crate::support::*;
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Boundary, Disclosed, Guard, Guarded, ToolArgs, ToolError, exposed, ops::SqliteStore,
    outcome::Outcome, read_only,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    the_offer_names_the_class_and_the_caps,
    a_grant_shows_later_logs_unasked_and_says_so,
    the_caps_hold_under_a_grant_and_a_refusal_spends_none_of_it,
    a_declaration_that_discloses_more_is_not_covered,
);

fn tick() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

fn tick_and_grant() -> Answer {
    Answer::Accept(json!({"confirm": true, "guard_grant": "grant"}))
}

/// A world with build logs: job 42 of 3 lines, 43 of 2 lines, 44 of 2500 lines (above the
/// per-call cap) and 45..=49 of 2000 lines each.
fn builds() -> World {
    let world = World::new();
    std::fs::create_dir_all(world.path("builds")).unwrap();
    let log = |job: u32, lines: usize| {
        let text: Vec<String> = (0..lines).map(|i| format!("job {job} step {i}")).collect();
        std::fs::write(
            world.path(&format!("builds/{job}.log")),
            text.join("\n") + "\n",
        )
        .unwrap();
    };
    log(42, 3);
    log(43, 2);
    log(44, 2500);
    for job in 45..=49 {
        log(job, 2000);
    }
    world
}

/// `_meta.guard.grant` of a result, if a grant touched the call.
fn grant_meta(result: &CallToolResult) -> Option<Value> {
    let meta = serde_json::to_value(&result.meta).expect("meta");
    meta["guard"].get("grant").cloned()
}

async fn the_offer_names_the_class_and_the_caps(era: ProtocolVersion) {
    let world = builds();
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let server = world.server_with(operations_guard(world.operations_store(), "alice"));
    let client = connect(server, human.clone()).await;
    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(grant_meta(&result), None, "this call only: no grant");
    let [shown] = &human.shown()[..] else {
        panic!("one question: {:?}", human.shown());
    };
    let choice = &shown.schema["properties"]["guard_grant"];
    assert_eq!(choice["default"], "once", "{choice}");
    assert_eq!(
        choice["oneOf"][1]["title"],
        "This and up to 5 more calls of read_build_log on any build log in builds/ \
         (discloses credentials; at most 2000 log lines and 262144 bytes a call), for 10 \
         minutes, without asking again"
    );
    let _ = client.cancel().await;
}

async fn a_grant_shows_later_logs_unasked_and_says_so(era: ProtocolVersion) {
    let world = builds();
    let store = world.operations_store();
    let server = || world.server_with(operations_guard(store.clone(), "alice"));
    let serving = server();
    let guard = serving.guard_config().clone();
    let log = guard.operations().unwrap().audit_log().clone();
    let human = ScriptedHuman::new(era.clone());
    human.will(tick_and_grant());
    let client = connect(serving, human.clone()).await;
    let opened = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_natural(&opened, Outcome::Executed);
    assert!(text(&opened).contains("job 42 step 2"), "{}", text(&opened));
    let grant = grant_meta(&opened).expect("the answer names the grant it opened");
    assert_eq!(grant["use"], "opened");
    assert_eq!(
        grant["scope"],
        "any build log in builds/ (discloses credentials; at most 2000 log lines and 262144 bytes a call)"
    );
    let id = grant["grantId"].as_str().unwrap().to_owned();

    // Another job's log, on a new connection to another server on the same store.
    let later = ScriptedHuman::new(era.clone());
    let elsewhere = server();
    let settled = elsewhere.guard_config().clone();
    let other = connect(elsewhere, later.clone()).await;
    let used = call(&other, "read_build_log", json!({"job": 43})).await;
    assert_natural(&used, Outcome::Executed);
    assert!(later.shown().is_empty(), "nobody was asked");
    let said = text(&used);
    assert!(said.contains("job 43 step 1"), "the log is shown: {said}");
    assert!(
        said.contains(&format!("Nobody was asked: grant {id}")),
        "{said}"
    );
    assert_eq!(grant_meta(&used).unwrap()["callsLeft"], 4);

    // The covered call is recorded with its counts and the grant, never the log.
    settled.audit_settled().await;
    let trace = trace_id(&used).unwrap();
    let records: Vec<Value> = log
        .by_trace(&trace)
        .await
        .unwrap()
        .into_iter()
        .map(|r| serde_json::from_str(&r.entry).unwrap())
        .collect();
    assert!(
        records.iter().any(|r| r["outcome"] == "grant_used"),
        "{records:?}"
    );
    let executed = records
        .iter()
        .find(|r| r["outcome"] == "executed")
        .expect("an executed record");
    assert_eq!(executed["grant_id"], id.as_str());
    assert_eq!(executed["disclosed"]["items"], 2);
    assert_eq!(executed["disclosed"]["class"], "credentials");
    for record in &records {
        assert!(!record.to_string().contains("step 1"), "{record}");
    }
    let _ = client.cancel().await;
    let _ = other.cancel().await;
}

async fn the_caps_hold_under_a_grant_and_a_refusal_spends_none_of_it(era: ProtocolVersion) {
    let world = builds();
    let server = world.server_with(operations_guard(world.operations_store(), "alice"));
    let human = ScriptedHuman::new(era.clone());
    human.will(tick_and_grant());
    let client = connect(server, human.clone()).await;
    let opened = call(&client, "read_build_log", json!({"job": 45})).await;
    assert_natural(&opened, Outcome::Executed);
    assert_eq!(grant_meta(&opened).unwrap()["callsLeft"], 5);

    // Above the per-call cap: refused before the grant is looked at.
    let over = call(&client, "read_build_log", json!({"job": 44})).await;
    assert_natural(&over, Outcome::OverDisclosureCap);
    assert_eq!(grant_meta(&over), None, "{over:?}");
    assert!(!text(&over).contains("job 44 step"), "nothing was shown");

    // Four more full logs fill the session's 10000 lines; the grant covers each.
    for (left, job) in (1..=4).rev().zip(46..=49) {
        let used = call(&client, "read_build_log", json!({"job": job})).await;
        assert_natural(&used, Outcome::Executed);
        assert_eq!(grant_meta(&used).unwrap()["callsLeft"], left, "job {job}");
    }
    // The grant has a call left, and the session none: the session cap wins.
    let spent = call(&client, "read_build_log", json!({"job": 43})).await;
    assert_natural(&spent, Outcome::OverDisclosureCap);
    assert!(
        text(&spent).contains("at most 10000 log lines per session"),
        "{}",
        text(&spent)
    );
    assert_eq!(grant_meta(&spent), None);
    assert_eq!(human.shown().len(), 1, "only the first call asked");
    let _ = client.cancel().await;
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct LogArgs {
    /// The log's name.
    name: String,
    /// The account the log is read as, if not the tool's own.
    #[serde(default)]
    account: Option<String>,
}

/// A server whose `read_log` discloses `$class` with at most `$cap` lines a call, and offers
/// grants over "every log": the same tool redeployed with another declaration.
#[rustfmt::skip]
macro_rules! log_server {
    ($server:ident, $class:tt, $cap:tt) => {
        #[derive(Clone)]
        struct $server {
            guard: Arc<Guard>,
        }

        impl Guarded for $server {
            fn guard(&self) -> &Guard {
                &self.guard
            }
        }

        #[tool_router]
        impl $server {
            /// Show a log.
            #[read_only(
                                discloses = $class,
                                boundary = Self::boundary,
                                max_items = $cap,
                                grant = "10m",
                                grant_calls = 3
                            )]
            #[tool]
            async fn read_log(
                &self,
                Parameters(args): Parameters<LogArgs>,
            ) -> Result<Disclosed<String>, ToolError> {
                Ok(Disclosed::new(1, format!("the log of {}", args.name)))
            }

            async fn boundary(&self, args: &LogArgs) -> Result<Boundary, ToolError> {
                let boundary = Boundary::new(format!("log {}", args.name), "the log")
                    .items(1, "lines")
                    .grant_scope("every log");
                Ok(match &args.account {
                    Some(account) => boundary.account(account),
                    None => boundary,
                })
            }
        }

        #[tool_handler(router = exposed(self, Self::tool_router))]
        impl ServerHandler for $server {
            fn get_info(&self) -> ServerConfig {
                ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            }
        }
    };
}

log_server!(Sensitive, "sensitive", 100);
log_server!(Credentials, "credentials", 100);
log_server!(MoreLines, "sensitive", 1000);

fn guard_on(store: &SqliteStore) -> Arc<Guard> {
    Arc::new(
        operations_guard(store.clone(), "alice").with_exposure(rmcp_guard::Exposure::all_tools()),
    )
}

/// Reads log `name` from `server`, the human answering with `answers`: the result and how
/// many questions were shown.
async fn read_log<S: ServerHandler>(
    server: S,
    era: &ProtocolVersion,
    args: Value,
    answers: &[Answer],
) -> (CallToolResult, usize) {
    let human = ScriptedHuman::new(era.clone());
    for answer in answers {
        human.will(answer.clone());
    }
    let client = connect(server, human.clone()).await;
    let result = call(&client, "read_log", args).await;
    let _ = client.cancel().await;
    (result, human.shown().len())
}

async fn a_declaration_that_discloses_more_is_not_covered(era: ProtocolVersion) {
    let world = World::new();
    let store = world.operations_store();
    let (opened, _) = read_log(
        Sensitive {
            guard: guard_on(&store),
        },
        &era,
        json!({"name": "a"}),
        &[tick_and_grant()],
    )
    .await;
    assert_natural(&opened, Outcome::Executed);
    assert_eq!(
        grant_meta(&opened).unwrap()["scope"],
        "every log (discloses sensitive; at most 100 lines a call)"
    );

    // The same tool, redeployed to disclose credentials or more lines: asked again.
    let (result, asked) = read_log(
        Credentials {
            guard: guard_on(&store),
        },
        &era,
        json!({"name": "b"}),
        &[Answer::Decline],
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "another class is asked");
    assert!(!text(&result).contains("the log of b"), "nothing was shown");
    let (result, asked) = read_log(
        MoreLines {
            guard: guard_on(&store),
        },
        &era,
        json!({"name": "c"}),
        &[Answer::Decline],
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "a higher cap is asked");
    // The same declaration read as another account than the human saw: asked again.
    let (result, asked) = read_log(
        Sensitive {
            guard: guard_on(&store),
        },
        &era,
        json!({"name": "e", "account": "admin"}),
        &[Answer::Decline],
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(asked, 1, "another account is asked");

    // The declaration the human saw is still covered, and the refusals spent nothing.
    let (result, asked) = read_log(
        Sensitive {
            guard: guard_on(&store),
        },
        &era,
        json!({"name": "d"}),
        &[],
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(asked, 0);
    assert!(text(&result).contains("the log of d"));
    assert_eq!(grant_meta(&result).unwrap()["callsLeft"], 2);
}
