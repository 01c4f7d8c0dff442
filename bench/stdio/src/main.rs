//! stdio-bench: what a guarded `delete_file` costs against a hand-written rmcp server, end to
//! end, as a client sees it. Both servers are release binaries spawned as child processes on
//! stdio (safe-ops, and `hand-written-delete`), each client an rmcp client whose handler
//! answers every form (`rmcp_guard_test::testing::ScriptedHuman`).
//!
//! For each number of clients (default 1 and 8: that many server processes of each side,
//! one client each, calling concurrently) and each outcome (decline: the same file every
//! call; accept: a fresh file every call, written before the round's clock starts), the
//! sides take turns in rounds, the side that goes first rotating each round:
//!
//! - `guard/push`: safe-ops, protocol 2025-11-25 (`elicitation/create` pushed mid-call);
//! - `guard/mrtr`: safe-ops, protocol 2026-07-28 (an `InputRequiredResult` with a sealed
//!   `requestState`, answered by a second `tools/call`);
//! - `hand/push`: the hand-written server, protocol 2025-11-25.
//!
//! Every call's answer is checked (the decline text, or `Deleted …`), and after the accept
//! rounds every sandbox must be empty. Then each side is started afresh a number of times,
//! alternating: the time from spawn to the initialize answer, and the resident set
//! (`VmRSS`) once initialized and idle.
//!
//! A side's rate is its median round's; each figure is printed as a ratio between sides
//! measured in the same run; absolute
//! numbers are printed too, for the record, but only ratios compare across runs.
//!
//! `stdio-bench --guard target/release/safe-ops --hand target/release/hand-written-delete`

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
    transport::TokioChildProcess,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};
use tokio::{process::Command, task::JoinSet};

const USAGE: &str = "usage: stdio-bench --guard SAFE_OPS_BIN --hand HAND_WRITTEN_BIN \
[--rounds N (6)] [--calls N per client per round (150)] [--clients 1,8] [--startups N (15)] [--only-startup]";

/// The bytes written to every file before it is deleted (accept rounds).
const CONTENT: &[u8] = b"rotated log lines\nrotated log lines\nrotated log lines\n";
/// The file the decline rounds name on every call; it must survive them all.
const KEPT: &str = "keep.log";
const DECLINED: &str = "The user declined; nothing was deleted.";

struct Config {
    guard: PathBuf,
    hand: PathBuf,
    rounds: usize,
    calls: usize,
    clients: Vec<usize>,
    startups: usize,
    /// Only the startup time and idle RSS, no calls.
    only_startup: bool,
}

fn parse() -> Result<Config, String> {
    let mut config = Config {
        guard: PathBuf::new(),
        hand: PathBuf::new(),
        rounds: 6,
        calls: 150,
        clients: vec![1, 8],
        startups: 15,
        only_startup: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--only-startup" {
            config.only_startup = true;
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))?;
        let number = |v: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag} {v}: give a positive number; {USAGE}"))
        };
        match flag.as_str() {
            "--guard" => config.guard = value.into(),
            "--hand" => config.hand = value.into(),
            "--rounds" => config.rounds = number(&value)?,
            "--calls" => config.calls = number(&value)?,
            "--startups" => config.startups = number(&value)?,
            "--clients" => {
                config.clients = value.split(',').map(number).collect::<Result<_, _>>()?;
            }
            _ => return Err(format!("unknown flag {flag}; {USAGE}")),
        }
    }
    for (flag, bin) in [("--guard", &config.guard), ("--hand", &config.hand)] {
        if !bin.is_file() {
            return Err(format!(
                "{flag} {}: no such binary; build it with `cargo build --release` first; {USAGE}",
                bin.display()
            ));
        }
    }
    Ok(config)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Guard,
    Hand,
}

#[derive(Clone, Copy)]
enum Outcome {
    Decline,
    Accept,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Decline => "decline",
            Outcome::Accept => "accept",
        }
    }
}

#[derive(Clone)]
struct Side {
    label: &'static str,
    server: Server,
    era: ProtocolVersion,
}

fn sides() -> [Side; 3] {
    [
        Side {
            label: "guard/push",
            server: Server::Guard,
            era: ProtocolVersion::V_2025_11_25,
        },
        Side {
            label: "guard/mrtr",
            server: Server::Guard,
            era: ProtocolVersion::V_2026_07_28,
        },
        Side {
            label: "hand/push",
            server: Server::Hand,
            era: ProtocolVersion::V_2025_11_25,
        },
    ]
}

type Client = RunningService<RoleClient, ScriptedHuman>;

/// One server process and its client.
struct Conn {
    files: PathBuf,
    human: ScriptedHuman,
    client: Arc<Client>,
    pid: u32,
    next: u64,
}

impl Conn {
    /// Ends the session; the server exits when its stdin closes.
    async fn close(self) {
        if let Ok(client) = Arc::try_unwrap(self.client) {
            let _ = client.cancel().await;
        }
    }
}

/// Spawns `server` with its sandbox, database and log in `dir`, and connects in `era`.
/// Returns the connection and the time from spawn to the initialize answer.
async fn spawn(config: &Config, side: &Side, dir: &Path) -> Result<(Conn, Duration), String> {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
    std::fs::write(files.join(KEPT), CONTENT).map_err(|e| format!("{KEPT}: {e}"))?;
    let log = std::fs::File::create(dir.join("stderr.log")).map_err(|e| e.to_string())?;
    let bin = match side.server {
        Server::Guard => &config.guard,
        Server::Hand => &config.hand,
    };
    let mut command = Command::new(bin);
    command
        .current_dir(dir)
        .env("SAFE_OPS_ROOT", &files)
        .env("SAFE_OPS_DB", dir.join("ops.db"))
        .env_remove("RUST_LOG")
        .env_remove("GUARD_ALLOWLIST")
        .env_remove("GUARD_READ_ONLY")
        .env_remove("GUARD_HMAC_KEY");
    let started = Instant::now();
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let pid = transport.id().ok_or("the child has no pid")?;
    let human = ScriptedHuman::new(side.era.clone());
    let client = human
        .clone()
        .connect(transport)
        .await
        .map_err(|e| format!("{}: the session did not start: {e}", side.label))?;
    let startup = started.elapsed();
    Ok((
        Conn {
            files,
            human,
            client: Arc::new(client),
            pid,
            next: 0,
        },
        startup,
    ))
}

/// One call; an error unless it answered as `outcome` must.
async fn call(client: &Client, name: String, outcome: Outcome) -> Result<(), String> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("path".into(), Value::String(name));
    let result = client
        .call_tool(CallToolRequestParams::new("delete_file").with_arguments(arguments))
        .await
        .map_err(|e| format!("the call failed: {e}"))?;
    let said = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str())
        .unwrap_or_default();
    let ok = result.is_error != Some(true)
        && match outcome {
            Outcome::Decline => said == DECLINED,
            Outcome::Accept => said.starts_with("Deleted "),
        };
    if ok {
        Ok(())
    } else {
        Err(format!("unexpected answer to a {}: {said}", outcome.name()))
    }
}

/// Each round's rate of one side, and every call's latency.
#[derive(Default)]
struct Tally {
    rates: Vec<f64>,
    latencies: Vec<Duration>,
}

impl Tally {
    /// The median round's calls per second: a round that a neighbour on the machine
    /// disturbed moves it less than it moves a total.
    fn rate(&self) -> f64 {
        let mut rates = self.rates.clone();
        rates.sort_unstable_by(f64::total_cmp);
        rates.get(rates.len() / 2).copied().unwrap_or(0.0)
    }

    fn percentile(&mut self, p: f64) -> Duration {
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies.get(i).copied().unwrap_or_default()
    }
}

/// One round of one side: every client makes `calls` calls one after another, all clients
/// at once. Files and answers are set up before the clock starts.
async fn round(
    fleet: &mut [Conn],
    outcome: Outcome,
    calls: usize,
    tally: &mut Tally,
) -> Result<(), String> {
    let mut work = Vec::new();
    for conn in fleet.iter_mut() {
        let mut names = Vec::with_capacity(calls);
        for _ in 0..calls {
            match outcome {
                Outcome::Decline => {
                    names.push(KEPT.to_owned());
                    conn.human.will(Answer::Decline);
                }
                Outcome::Accept => {
                    let name = format!("f{:09}.log", conn.next);
                    conn.next += 1;
                    std::fs::write(conn.files.join(&name), CONTENT)
                        .map_err(|e| format!("cannot write {name}: {e}"))?;
                    names.push(name);
                    conn.human.will(Answer::Accept(json!({"confirm": true})));
                }
            }
        }
        work.push((Arc::clone(&conn.client), names));
    }
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (client, names) in work {
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(names.len());
            for name in names {
                let call_started = Instant::now();
                call(&client, name, outcome).await?;
                latencies.push(call_started.elapsed());
            }
            Ok::<_, String>(latencies)
        });
    }
    let mut latencies = Vec::new();
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done.map_err(|e| e.to_string())??);
    }
    tally
        .rates
        .push(latencies.len() as f64 / started.elapsed().as_secs_f64());
    tally.latencies.extend(latencies);
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn throughput(config: &Config, scratch: &Path) -> Result<(), String> {
    let sides = sides();
    for &clients in &config.clients {
        let mut fleets: Vec<Vec<Conn>> = Vec::new();
        for (s, side) in sides.iter().enumerate() {
            let mut fleet = Vec::new();
            for c in 0..clients {
                let dir = scratch.join(format!("run-{clients}-{s}-{c}"));
                fleet.push(spawn(config, side, &dir).await?.0);
            }
            fleets.push(fleet);
        }
        for outcome in [Outcome::Decline, Outcome::Accept] {
            // One warm-up round per side, not counted.
            for fleet in fleets.iter_mut() {
                round(fleet, outcome, config.calls / 4 + 1, &mut Tally::default()).await?;
            }
            let mut tallies: Vec<Tally> = sides.iter().map(|_| Tally::default()).collect();
            for r in 0..config.rounds {
                for k in 0..sides.len() {
                    let s = (r + k) % sides.len();
                    round(&mut fleets[s], outcome, config.calls, &mut tallies[s]).await?;
                }
            }
            println!("delete_file {}, {clients} client(s):", outcome.name());
            for (side, tally) in sides.iter().zip(tallies.iter_mut()) {
                println!(
                    "  {:<10} {:>8.0} calls/s (median round)   p50 {:>6.3} ms   p99 {:>6.3} ms",
                    side.label,
                    tally.rate(),
                    ms(tally.percentile(0.50)),
                    ms(tally.percentile(0.99)),
                );
            }
            let (push, mrtr, hand) = (tallies[0].rate(), tallies[1].rate(), tallies[2].rate());
            println!(
                "  RATIO {}/{clients} guard/push ÷ hand/push = {:.3}   guard/mrtr ÷ guard/push = {:.3}   guard/mrtr ÷ hand/push = {:.3}",
                outcome.name(),
                push / hand,
                mrtr / push,
                mrtr / hand
            );
        }
        for (side, fleet) in sides.iter().zip(&fleets) {
            for conn in fleet {
                // safe-ops' deletes are undoable: what it deleted waits in the sandbox's
                // trash until the window closes, out of every tool's reach.
                let left: Vec<_> = std::fs::read_dir(&conn.files)
                    .map_err(|e| e.to_string())?
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name != rmcp_guard::sandbox::TRASH)
                    .collect();
                if left != [KEPT] {
                    return Err(format!(
                        "{}: the sandbox should hold only {KEPT} now, it holds {left:?}",
                        side.label
                    ));
                }
            }
        }
        for conn in fleets.into_iter().flatten() {
            conn.close().await;
        }
    }
    Ok(())
}

/// Resident set of `pid`, in KiB, from `/proc`.
fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("/proc/{pid}/status has no VmRSS"))
}

fn median<T: Copy + Ord>(mut values: Vec<T>) -> T {
    values.sort_unstable();
    values[values.len() / 2]
}

async fn startup(config: &Config, scratch: &Path) -> Result<(), String> {
    let sides = sides();
    let push = [&sides[0], &sides[2]];
    let mut startups = [Vec::new(), Vec::new()];
    let mut rss = [Vec::new(), Vec::new()];
    for n in 0..config.startups {
        for k in 0..2 {
            let s = (n + k) % 2;
            // The same directory each time: after the first start the database exists, as
            // for any server started again.
            let dir = scratch.join(format!("start-{s}"));
            let (conn, took) = spawn(config, push[s], &dir).await?;
            // Idle: let the server finish whatever the initialize started.
            tokio::time::sleep(Duration::from_millis(100)).await;
            rss[s].push(rss_kib(conn.pid)?);
            startups[s].push(took);
            conn.close().await;
        }
    }
    let [guard_start, hand_start] = startups.map(median);
    let [guard_rss, hand_rss] = rss.map(median);
    println!(
        "startup to the initialize answer (median of {}):",
        config.startups
    );
    println!(
        "  guard {:.2} ms   hand {:.2} ms   RATIO startup guard ÷ hand = {:.3}",
        ms(guard_start),
        ms(hand_start),
        guard_start.as_secs_f64() / hand_start.as_secs_f64()
    );
    println!("idle RSS after initialize (median):");
    println!(
        "  guard {:.2} MiB   hand {:.2} MiB   RATIO rss guard ÷ hand = {:.3}",
        guard_rss as f64 / 1024.0,
        hand_rss as f64 / 1024.0,
        guard_rss as f64 / hand_rss as f64
    );
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let config = match parse() {
        Ok(config) => config,
        Err(message) => {
            eprintln!("stdio-bench: {message}");
            return ExitCode::from(2);
        }
    };
    // In memory where the system has it: the accept rounds create and delete many files,
    // and the disk's inode allocation would disturb the measured calls.
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile_dir(shm)
    } else {
        tempfile_dir(&std::env::temp_dir())
    };
    let scratch = match scratch {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("stdio-bench: cannot make a scratch directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = async {
        startup(&config, &scratch).await?;
        if config.only_startup {
            return Ok(());
        }
        throughput(&config, &scratch).await
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("stdio-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A fresh directory under `parent` named for this process.
fn tempfile_dir(parent: &Path) -> std::io::Result<PathBuf> {
    let dir = parent.join(format!("stdio-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
