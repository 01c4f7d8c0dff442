//! Per-user, per-tool rate limits, kept in the store so they hold across server processes.
//! A sliding window: the calls in the last `per` are counted; the bucket row is locked
//! first, so two calls of one user count one after the other. The whole check is one
//! pipeline: one trip to the store.

use std::time::Duration;

use crate::store::{Dialect, SqlValue, Statement, StoreError, Tx};

/// At most `limit` calls per `per`, for one user of one tool (`rate = "5/min"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed per period.
    pub limit: u32,
    /// The period.
    pub per: Duration,
}

impl Rate {
    /// Counts this call against `who`'s limit for `tool`. `Ok(Err(wait))` means the limit is
    /// used up and a call may succeed again after `wait`.
    pub(crate) async fn take(
        &self,
        tx: &mut Tx,
        (tenant, user): (&str, &str),
        tool: &str,
        now: i64,
    ) -> Result<Result<(), Duration>, StoreError> {
        let per = i64::try_from(self.per.as_millis()).unwrap_or(i64::MAX);
        let key = || -> Vec<SqlValue> { vec![tenant.into(), user.into(), tool.into()] };
        let window = || {
            let mut params = key();
            params.push(now.saturating_sub(per).into());
            params
        };
        let mut counted = window();
        counted.extend([now.into(), i64::from(self.limit).into()]);
        // One trip to the store: make sure the bucket exists, lock it (SQLite's transaction
        // already holds the database), forget calls older than the window, count the rest,
        // and record this call only if the count is under the limit.
        let mut statements = vec![Statement::execute(
            "INSERT INTO guard_rate_buckets (tenant, user_id, tool) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            key(),
        )];
        if tx.dialect() == Dialect::Postgres {
            statements.push(Statement::query(
                "SELECT tool FROM guard_rate_buckets
                 WHERE tenant = $1 AND user_id = $2 AND tool = $3 FOR UPDATE",
                key(),
            ));
        }
        statements.extend([
            Statement::execute(
                "DELETE FROM guard_rate_events
                 WHERE tenant = $1 AND user_id = $2 AND tool = $3 AND at <= $4",
                window(),
            ),
            Statement::query(
                "SELECT COUNT(*) AS calls, MIN(at) AS oldest FROM guard_rate_events
                 WHERE tenant = $1 AND user_id = $2 AND tool = $3 AND at > $4",
                window(),
            ),
            Statement::execute(
                "INSERT INTO guard_rate_events (tenant, user_id, tool, at)
                 SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($5 AS BIGINT)
                 WHERE (SELECT COUNT(*) FROM guard_rate_events
                        WHERE tenant = $1 AND user_id = $2 AND tool = $3 AND at > $4) < $6",
                counted,
            ),
        ]);
        let done = tx.pipeline(&statements).await?;
        let [.., count, recorded] = done.as_slice() else {
            return Err(StoreError::Column(
                "the rate check answered too few statements".into(),
            ));
        };
        let row = count
            .rows
            .first()
            .ok_or_else(|| StoreError::Column("COUNT returned no row".into()))?;
        if row.int("calls")? >= i64::from(self.limit) {
            let oldest = row.opt_int("oldest")?.unwrap_or(now);
            let wait = (oldest + per - now).max(1000);
            return Ok(Err(Duration::from_millis(wait.unsigned_abs())));
        }
        if recorded.changed != 1 {
            return Err(StoreError::Other(format!(
                "the rate check counted a call under the limit but recorded {} (the bucket was not locked)",
                recorded.changed
            )));
        }
        Ok(Ok(()))
    }

    /// "5 per minute", for messages.
    pub(crate) fn describe(&self) -> String {
        let per = match self.per.as_secs() {
            1 => "second".to_owned(),
            60 => "minute".to_owned(),
            3600 => "hour".to_owned(),
            86400 => "day".to_owned(),
            secs => format!("{secs} seconds"),
        };
        format!("{} per {per}", self.limit)
    }
}

/// Why a rate setting could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a rate; write CALLS/UNIT with CALLS a whole number above zero and UNIT one of s, min, h, day (for example 5/min)"
)]
pub struct BadRate(String);

/// `"5/min"`, `"100/h"`, `"2/s"`, `"1000/day"`: the same spelling as `#[prepare(rate = …)]`.
impl std::str::FromStr for Rate {
    type Err = BadRate;

    fn from_str(s: &str) -> Result<Self, BadRate> {
        let bad = || BadRate(s.to_owned());
        let (limit, per) = s.split_once('/').ok_or_else(bad)?;
        let limit: u32 = limit
            .trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(bad)?;
        let per = match per.trim() {
            "s" | "sec" | "second" => 1,
            "m" | "min" | "minute" => 60,
            "h" | "hour" => 3600,
            "d" | "day" => 86400,
            _ => return Err(bad()),
        };
        Ok(Self {
            limit,
            per: Duration::from_secs(per),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_like_the_macro_option() {
        assert_eq!(
            "5/min".parse::<Rate>(),
            Ok(Rate {
                limit: 5,
                per: Duration::from_secs(60)
            })
        );
        assert_eq!(
            "100/h".parse::<Rate>().unwrap().per,
            Duration::from_secs(3600)
        );
        for bad in ["", "5", "0/min", "-1/min", "5/week", "five/min", "5/"] {
            let error = bad.parse::<Rate>().unwrap_err().to_string();
            assert!(error.contains("for example 5/min"), "{bad}: {error}");
        }
    }
}
