//! What routing costs per call as a server's tool count grows: one server with 1 tool and
//! one with 100, both published through an allowlist by `exposed(self, Self::tool_router)`,
//! the way every guarded server is. The same tool (`t000`, a plain tool that answers its
//! name) is reached on both, so the difference is what the router, the allowlist and the
//! exposure do per call.
//!
//! - `get_tool`: what rmcp's generated `call_tool` and `get_tool` do before the tool runs:
//!   evaluate the router expression and look the name up;
//! - `call`: a whole `tools/call` in process, over `tokio::io::duplex`.
//!
//! The two servers take turns in rounds (the one going first alternates), and the ratio of
//! their median round's mean time is printed as a `RATIO` line (100 tools ÷ 1 tool); a
//! ratio compares sides of one run only.
//! Run with `cargo bench -p guard-tests --bench routing`.

use std::{hint::black_box, path::Path, sync::Arc, time::Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::{
    RoleClient, ServerHandler, ServiceExt, model::CallToolRequestParams, service::RunningService,
    tool, tool_handler, tool_router,
};
use rmcp_guard::{Exposure, Guard, Guarded, exposed};

/// A server type named `$server` whose router holds one plain tool per name, published by an
/// allowlist that lists them all.
macro_rules! server {
    ($server:ident: $($tool:ident)*) => {
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
            $(
                /// Answers its own name.
                #[tool]
                async fn $tool(&self) -> String {
                    stringify!($tool).to_owned()
                }
            )*
        }

        #[tool_handler(router = exposed(self, Self::tool_router))]
        impl ServerHandler for $server {}

        impl $server {
            /// The server, with an allowlist in `dir` that lists every tool.
            fn new(dir: &Path) -> Self {
                let names = [$(concat!("\"", stringify!($tool), "\"")),*].join(", ");
                let allowlist = dir.join(concat!(stringify!($server), ".toml"));
                std::fs::write(&allowlist, format!("tools = [{names}]\n")).expect("allowlist");
                let guard = Guard::ephemeral()
                    .expect("guard key")
                    .with_exposure(Exposure::allowlist(&allowlist));
                Self {
                    guard: Arc::new(guard),
                }
            }
        }
    };
}

server!(OneTool: t000);
server!(HundredTools:
    t000 t001 t002 t003 t004 t005 t006 t007 t008 t009 t010 t011 t012 t013
    t014 t015 t016 t017 t018 t019 t020 t021 t022 t023 t024 t025 t026 t027
    t028 t029 t030 t031 t032 t033 t034 t035 t036 t037 t038 t039 t040 t041
    t042 t043 t044 t045 t046 t047 t048 t049 t050 t051 t052 t053 t054 t055
    t056 t057 t058 t059 t060 t061 t062 t063 t064 t065 t066 t067 t068 t069
    t070 t071 t072 t073 t074 t075 t076 t077 t078 t079 t080 t081 t082 t083
    t084 t085 t086 t087 t088 t089 t090 t091 t092 t093 t094 t095 t096 t097
    t098 t099
);

async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("the client connects")
}

async fn call(client: &RunningService<RoleClient, ()>) {
    let result = client
        .call_tool(CallToolRequestParams::new("t000"))
        .await
        .expect("t000 answers");
    assert_ne!(result.is_error, Some(true), "t000 failed: {result:?}");
}

/// Rounds of the interleaved measurement, and lookups and calls per side in each round.
const ROUNDS: usize = 30;
const LOOKUPS_PER_ROUND: usize = 20_000;
const CALLS_PER_ROUND: usize = 200;

/// The median of `rounds`: a round a neighbour on the machine disturbed moves it little.
fn median(rounds: &[f64]) -> f64 {
    let mut sorted = rounds.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn routing(_: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let one = OneTool::new(dir.path());
    let hundred = HundredTools::new(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (one_client, hundred_client) =
        rt.block_on(async { (connect(one.clone()).await, connect(hundred.clone()).await) });
    // Both publish what their allowlist lists, and reach the same tool.
    let listed = rt.block_on(async {
        (
            one_client.list_all_tools().await.expect("tools/list").len(),
            hundred_client
                .list_all_tools()
                .await
                .expect("tools/list")
                .len(),
        )
    });
    assert_eq!(listed, (1, 100), "each server publishes all of its tools");

    // Each round's mean time per lookup and per call, for [1 tool, 100 tools]; the side
    // going first alternates.
    let mut lookups: [Vec<f64>; 2] = Default::default();
    let mut calls: [Vec<f64>; 2] = Default::default();
    let lookup = |side: usize| {
        let started = Instant::now();
        for _ in 0..LOOKUPS_PER_ROUND {
            let tool = match side {
                0 => one.get_tool(black_box("t000")),
                _ => hundred.get_tool(black_box("t000")),
            };
            black_box(tool.expect("t000 is published"));
        }
        started.elapsed().as_secs_f64() / LOOKUPS_PER_ROUND as f64
    };
    let clients = [&one_client, &hundred_client];
    rt.block_on(async {
        for client in clients {
            for _ in 0..CALLS_PER_ROUND {
                call(client).await;
            }
        }
    });
    for round in 0..ROUNDS {
        for k in 0..2 {
            let side = (round + k) % 2;
            lookups[side].push(lookup(side));
            let spent = rt.block_on(async {
                let started = Instant::now();
                for _ in 0..CALLS_PER_ROUND {
                    call(clients[side]).await;
                }
                started.elapsed()
            });
            calls[side].push(spent.as_secs_f64() / CALLS_PER_ROUND as f64);
        }
    }
    println!("routing, {ROUNDS} interleaved rounds (median round's mean):");
    for (what, rounds) in [("get_tool", &lookups), ("call", &calls)] {
        let (one, hundred) = (median(&rounds[0]), median(&rounds[1]));
        println!(
            "  {what:<8} 1 tool {:>9.3} µs   100 tools {:>9.3} µs",
            one * 1e6,
            hundred * 1e6
        );
        println!(
            "  RATIO routing {what}, 100 tools ÷ 1 tool = {:.3} (goal ≤ 1.05)",
            hundred / one
        );
    }
    rt.block_on(async {
        let _ = one_client.cancel().await;
        let _ = hundred_client.cancel().await;
    });
}

criterion_group!(benches, routing);
criterion_main!(benches);
