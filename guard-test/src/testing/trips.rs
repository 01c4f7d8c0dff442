//! An operation store that records the trips its transactions make to the engine, so a test
//! can pin how many a call takes (a regression in round trips fails a test, not a bench).

use std::sync::{Arc, Mutex};

use rmcp_guard::ops::{
    BoxFuture, Dialect, Done, OperationStore, Row, SqlValue, Statement, StoreError, Then, Tx,
    TxBackend,
};

/// Wraps a store and records, per transaction, every trip to its engine with the statements
/// it carried. A trip is one call into the engine's transaction, which sends that call's
/// statements together: one job on SQLite's thread, one pipelined round trip on
/// PostgreSQL. `BEGIN` rides with the first statement and costs none; a commit or rollback
/// of a transaction that sent nothing costs none either, as in both engines.
#[derive(Clone)]
pub struct CountingStore {
    inner: Arc<dyn OperationStore>,
    log: Arc<Mutex<Vec<Trips>>>,
}

/// The trips of one transaction, in order: each the text of the statements it carried
/// (`COMMIT` or `ROLLBACK` where it ended the transaction).
type Trips = Arc<Mutex<Vec<Vec<String>>>>;

impl CountingStore {
    /// Records the trips of `inner`'s transactions.
    pub fn new(inner: Arc<dyn OperationStore>) -> Self {
        Self {
            inner,
            log: Arc::default(),
        }
    }

    /// Every transaction begun since the last call, with its trips; the record starts over.
    pub fn take(&self) -> Vec<Vec<Vec<String>>> {
        let taken = std::mem::take(&mut *self.log.lock().expect("trip log"));
        taken
            .into_iter()
            .map(|trips| trips.lock().expect("trips").clone())
            .collect()
    }
}

impl OperationStore for CountingStore {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let inner = self.inner.begin().await?;
            let trips = Trips::default();
            self.log.lock().expect("trip log").push(trips.clone());
            Ok(Tx::new(Box::new(CountingTx {
                dialect: inner.dialect(),
                inner,
                trips,
            })))
        })
    }
}

struct CountingTx {
    inner: Tx,
    dialect: Dialect,
    trips: Trips,
}

impl CountingTx {
    fn trip(&self, statements: impl IntoIterator<Item = String>) {
        self.trips
            .lock()
            .expect("trips")
            .push(statements.into_iter().collect());
    }

    fn sent(&self) -> bool {
        !self.trips.lock().expect("trips").is_empty()
    }
}

fn texts(statements: &[Statement]) -> impl Iterator<Item = String> + '_ {
    statements.iter().map(|s| s.sql().to_owned())
}

impl TxBackend for CountingTx {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.trip([sql.to_owned()]);
        Box::pin(self.inner.execute(sql, params))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        self.trip([sql.to_owned()]);
        Box::pin(self.inner.query(sql, params))
    }

    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.trip([sql.to_owned()]);
        Box::pin(self.inner.batch(sql))
    }

    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        self.trip(texts(statements));
        Box::pin(self.inner.pipeline(statements))
    }

    fn commit_after(
        self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.trip(texts(&statements).chain(["COMMIT".to_owned()]));
        Box::pin(self.inner.commit_after(statements))
    }

    /// SQLite runs `then` on its thread: one trip. PostgreSQL cannot, and takes the default's
    /// two (counted as such).
    fn commit_then(
        self: Box<Self>,
        statements: Vec<Statement>,
        then: Then,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        if self.dialect != Dialect::Sqlite {
            let mut this = self;
            return Box::pin(async move {
                let done = this.pipeline(&statements).await;
                match done.and_then(then) {
                    Ok(more) => this.commit_after(more).await,
                    Err(error) => {
                        let _ = this.rollback().await;
                        Err(error)
                    }
                }
            });
        }
        self.trip(texts(&statements));
        let trips = self.trips.clone();
        let then: Then = Box::new(move |done| {
            let more = then(done)?;
            if let Some(trip) = trips.lock().expect("trips").last_mut() {
                trip.extend(texts(&more).chain(["COMMIT".to_owned()]));
            }
            Ok(more)
        });
        Box::pin(self.inner.commit_then(statements, then))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if self.sent() {
            self.trip(["COMMIT".to_owned()]);
        }
        Box::pin(self.inner.commit())
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if self.sent() {
            self.trip(["ROLLBACK".to_owned()]);
        }
        Box::pin(self.inner.rollback())
    }
}
