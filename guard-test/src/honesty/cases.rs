//! How each case is run, and what it observed: every run starts from a fresh fixture,
//! reads the observers around the calls, and hands the readings to the judging.

use std::{future::Future, sync::Arc, time::Duration};

use rmcp::{ServerHandler, service::ServiceError};
use serde_json::Value;

use super::{
    kit::{Fixture, Kit, Probe},
    observe::Snapshot,
    observed::{Burst, CallOutcome, Once, Races, Retry, Series, SeriesCall, summarize_wire},
    proxy::{Gate, Reaction},
    reporting::{Claim, Claims},
    session::{call_on, params},
};
use crate::testing::{Answer, ScriptedHuman};

impl<F, Fut, S> Kit<F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<S>>,
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    /// Case 1: one call of the valid input on a fresh fixture, after reading the tool's
    /// claims from `tools/list` (`None` when the tool is not listed).
    pub(super) async fn once(&self, probe: &Probe) -> Result<(Option<Claims>, Once), String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let before_items = fixture.items()?;
        let before_times = fixture.times()?;
        let observed: Vec<String> = fixture.observers.iter().map(|o| o.label()).collect();
        let (client, link) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, &probe.args, 1),
                None,
                false,
            )
            .await?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let Some(tool) = tools.iter().find(|t| t.name == probe.tool) else {
            self.hang_up(client, link).await;
            return Ok((
                None,
                Once {
                    before: before.clone(),
                    after: before,
                    before_items: before_items.clone(),
                    after_items: before_items,
                    before_times: before_times.clone(),
                    after_times: before_times,
                    outcome: Err(ServiceError::UnexpectedResponse),
                    observed,
                },
            ));
        };
        let claims = Claims::from(tool);
        let outcome = client.call_tool(params(&probe.tool, &probe.args)?).await;
        self.hang_up(client, link).await;
        let after = fixture.snapshot()?;
        let after_items = fixture.items()?;
        let after_times = fixture.times()?;
        Ok((
            Some(claims),
            Once {
                before,
                after,
                before_items,
                after_items,
                before_times,
                after_times,
                outcome,
                observed,
            },
        ))
    }

    /// Case 2: the valid input and its repeats, on a fresh fixture.
    pub(super) async fn fresh_series(&self, probe: &Probe) -> Result<Series, String> {
        let fixture = (self.factory)().await;
        self.series(&fixture, probe, &probe.args).await
    }

    /// One call of `args` on a session of its own, then [`Kit::repeats`] more: the odd
    /// repeats on that same session (each with the next request id), the even ones each on
    /// a new session, after as many other requests as the repeat's number (so their call's
    /// request id differs too). A snapshot after every call; items and times around them all.
    async fn series(
        &self,
        fixture: &Fixture<S>,
        probe: &Probe,
        args: &Value,
    ) -> Result<Series, String> {
        let before = fixture.snapshot()?;
        let before_items = fixture.items()?;
        let before_times = fixture.times()?;
        let on_first_session = 1 + self.repeats.div_ceil(2);
        let (session, link) = self
            .connect(
                fixture.server.clone(),
                self.human(probe, args, on_first_session),
                None,
                false,
            )
            .await?;
        let mut calls = Vec::new();
        let ran = async {
            let outcome = session.call_tool(params(&probe.tool, args)?).await;
            calls.push(SeriesCall {
                how: "a new session".into(),
                outcome,
                after: fixture.snapshot()?,
            });
            for i in 1..=self.repeats {
                let (how, outcome) = if i % 2 == 1 {
                    let outcome = session.call_tool(params(&probe.tool, args)?).await;
                    (
                        "the first call's session, the next request id".to_owned(),
                        outcome,
                    )
                } else {
                    let outcome = self.call(fixture.server.clone(), probe, args, i).await?;
                    (
                        format!("a new session, the request id shifted by {i}"),
                        outcome,
                    )
                };
                calls.push(SeriesCall {
                    how,
                    outcome,
                    after: fixture.snapshot()?,
                });
            }
            Ok::<_, String>(())
        }
        .await;
        self.hang_up(session, link).await;
        ran?;
        Ok(Series {
            before,
            before_items,
            after_items: fixture.items()?,
            before_times,
            after_times: fixture.times()?,
            calls,
        })
    }

    /// Case 3: each nonexistent or invalid input and its repeats, one after the other on
    /// one fresh fixture.
    pub(super) async fn invalid(&self, probe: &Probe) -> Result<Vec<(Value, Series)>, String> {
        let fixture = (self.factory)().await;
        let mut out = Vec::new();
        for args in &probe.invalid {
            let series = self.series(&fixture, probe, args).await?;
            out.push((args.clone(), series));
        }
        Ok(out)
    }

    /// Case 4: the client is cut off once the server has received the call, then a new
    /// client sends the same call again.
    pub(super) async fn dropped_then_retry(&self, probe: &Probe) -> Result<Retry, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        // Nobody will answer this client: it is gone before any question could reach it.
        let gone = ScriptedHuman::new(self.protocol.clone());
        gone.will(Answer::Ignore);
        let (client, mut link) = self
            .connect(fixture.server.clone(), gone, None, true)
            .await?;
        let call_params = params(&probe.tool, &probe.args)?;
        let call = tokio::spawn(async move {
            let _ = client.call_tool(call_params).await;
        });
        let received = tokio::time::timeout(self.patience, link.call_received())
            .await
            .unwrap_or(false);
        if !received {
            call.abort();
            return Err("the call never reached the server".into());
        }
        let reaction = tokio::time::timeout(self.patience, link.server_reacted())
            .await
            .ok()
            .flatten();
        // The client goes away for good; then the server's input ends.
        call.abort();
        let _ = call.await;
        link.close_server();
        let finished = tokio::time::timeout(self.patience, link.server)
            .await
            .is_ok();
        let middle = self.settle(&fixture).await?;
        let first = format!(
            "the connection broke after the server received the request; {}{}",
            match &reaction {
                Some(Reaction::Answered(answer)) =>
                    format!("the server's answer was lost: {}", summarize_wire(answer)),
                Some(Reaction::Asked) => "the server was asking the human, who was gone".to_owned(),
                None => "the server did not react in time".to_owned(),
            },
            if finished {
                ""
            } else {
                " (the server had not finished when the wait ended)"
            }
        );
        // The retry is a new session whose call carries another request id.
        let second = self
            .call(fixture.server.clone(), probe, &probe.args, 1)
            .await?;
        let after = fixture.snapshot()?;
        Ok(Retry {
            before,
            middle,
            after,
            first,
            second,
        })
    }

    /// Case 5: [`Kit::in_flight`] identical calls released together, each from its own
    /// client, on a fresh fixture; for an idempotent claim up to [`Kit::races`] runs,
    /// stopping at the first that leaves a state different from one call.
    pub(super) async fn concurrent(
        &self,
        claim: Claim,
        probe: &Probe,
        one_call: &Snapshot,
    ) -> Races {
        let runs = if claim == Claim::Idempotent {
            self.races
        } else {
            1
        };
        let mut last = Err("no run".to_owned());
        for run in 1..=runs {
            let burst = match self.burst(probe).await {
                Ok(burst) => burst,
                Err(e) => {
                    last = Err(format!("run {run}: {e}"));
                    break;
                }
            };
            let raced = &burst.after != one_call;
            last = Ok((run, burst));
            if raced {
                break;
            }
        }
        Races {
            in_flight: self.in_flight,
            runs,
            last,
        }
    }

    /// One run of case 5 on a fresh fixture: every client's call is held at the gate until
    /// all have arrived, then all go on together.
    async fn burst(&self, probe: &Probe) -> Result<Burst, String> {
        let fixture = (self.factory)().await;
        let before = fixture.snapshot()?;
        let gate = Gate::new(self.in_flight);
        let mut sessions = Vec::new();
        for _ in 0..self.in_flight {
            let (client, link) = self
                .connect(
                    fixture.server.clone(),
                    self.human(probe, &probe.args, 1),
                    Some(gate.clone()),
                    false,
                )
                .await?;
            sessions.push((Arc::new(client), link));
        }
        let mut calls = tokio::task::JoinSet::new();
        for (i, (client, _)) in sessions.iter().enumerate() {
            let (client, gate, probe) = (client.clone(), gate.clone(), probe.clone());
            calls.spawn(async move { (i, call_on(&client, &gate, &probe).await) });
        }
        let mut outcomes: Vec<Option<CallOutcome>> = (0..self.in_flight).map(|_| None).collect();
        while let Some(done) = calls.join_next().await {
            if let Ok((i, outcome)) = done {
                outcomes[i] = Some(outcome);
            }
        }
        for (client, link) in sessions {
            match Arc::into_inner(client) {
                Some(client) => self.hang_up(client, link).await,
                None => link.server.abort(),
            }
        }
        let after = fixture.snapshot()?;
        Ok(Burst {
            before,
            after,
            outcomes: outcomes
                .into_iter()
                .map(|o| o.unwrap_or(Err(ServiceError::UnexpectedResponse)))
                .collect(),
        })
    }

    /// Reads the fixture until two readings a little apart agree (bounded): after a
    /// dropped connection nothing tells the kit when the last effect landed.
    async fn settle(&self, fixture: &Fixture<S>) -> Result<Snapshot, String> {
        let mut last = fixture.snapshot()?;
        let mut stable = 0;
        let deadline = tokio::time::Instant::now() + self.patience;
        while stable < 3 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = fixture.snapshot()?;
            if now == last {
                stable += 1;
            } else {
                stable = 0;
                last = now;
            }
        }
        Ok(last)
    }
}
