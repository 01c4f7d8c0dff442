//! Per-user, per-tool rate limits, kept in the store so they hold across server processes.
//! A sliding window: the calls in the last `per` are counted; the bucket row is locked
//! first, so two calls of one user count one after the other.

use std::time::Duration;

use super::sql::{Dialect, StoreError, Tx};

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
        let key = [tenant.into(), user.into(), tool.into()];
        let lock = match tx.dialect() {
            Dialect::Postgres => " FOR UPDATE",
            Dialect::Sqlite => "",
        };
        let bucket = format!(
            "SELECT tool FROM guard_rate_buckets
             WHERE tenant = $1 AND user_id = $2 AND tool = $3{lock}"
        );
        if tx.query_opt(&bucket, &key).await?.is_none() {
            // The user's first call of this tool: create the bucket, then lock it.
            tx.execute(
                "INSERT INTO guard_rate_buckets (tenant, user_id, tool) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &key,
            )
            .await?;
            tx.query(&bucket, &key).await?;
        }
        let per = i64::try_from(self.per.as_millis()).unwrap_or(i64::MAX);
        let window_start = now.saturating_sub(per);
        let mut params = key.to_vec();
        params.push(window_start.into());
        tx.execute(
            "DELETE FROM guard_rate_events
             WHERE tenant = $1 AND user_id = $2 AND tool = $3 AND at <= $4",
            &params,
        )
        .await?;
        let row = tx
            .query_opt(
                "SELECT COUNT(*) AS calls, MIN(at) AS oldest FROM guard_rate_events
                 WHERE tenant = $1 AND user_id = $2 AND tool = $3 AND at > $4",
                &params,
            )
            .await?
            .ok_or_else(|| StoreError::Column("COUNT returned no row".into()))?;
        if row.int("calls")? >= i64::from(self.limit) {
            let oldest = row.opt_int("oldest")?.unwrap_or(now);
            let wait = (oldest + per - now).max(1000);
            return Ok(Err(Duration::from_millis(wait.unsigned_abs())));
        }
        params[3] = now.into();
        tx.execute(
            "INSERT INTO guard_rate_events (tenant, user_id, tool, at) VALUES ($1, $2, $3, $4)",
            &params,
        )
        .await?;
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
