//! A store that records what each of its transactions sent and how it ended, for the
//! pipeline's tests: which records and spends rode in which commit. (A server's own tests
//! count round trips with `rmcp-guard-test`'s `CountingStore`, which this crate's tests
//! cannot depend on.)

use std::sync::{Arc, Mutex};

use crate::store::{
    BoxFuture, Dialect, Done, OperationStore, Row, SqlValue, Statement, StoreError, Then, Tx,
    TxBackend,
};

/// The statements of one transaction, in order, `COMMIT` or `ROLLBACK` last where it ended.
type Sent = Arc<Mutex<Vec<String>>>;

/// Wraps a store and records every statement of its transactions.
#[derive(Clone)]
pub(super) struct Recording {
    inner: Arc<dyn OperationStore>,
    log: Arc<Mutex<Vec<Sent>>>,
}

impl Recording {
    pub(super) fn new(inner: Arc<dyn OperationStore>) -> Self {
        Self {
            inner,
            log: Arc::default(),
        }
    }

    /// Every transaction begun since the last call, with what it sent; the record starts
    /// over.
    pub(super) fn take(&self) -> Vec<Vec<String>> {
        let taken = std::mem::take(&mut *self.log.lock().expect("log"));
        taken
            .into_iter()
            .map(|sent| sent.lock().expect("sent").clone())
            .collect()
    }
}

impl OperationStore for Recording {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let inner = self.inner.begin().await?;
            let sent = Sent::default();
            self.log.lock().expect("log").push(sent.clone());
            Ok(Tx::new(Box::new(RecordingTx {
                dialect: inner.dialect(),
                inner,
                sent,
            })))
        })
    }
}

struct RecordingTx {
    inner: Tx,
    dialect: Dialect,
    sent: Sent,
}

impl RecordingTx {
    fn record<'a>(&self, statements: impl IntoIterator<Item = &'a str>) {
        let mut sent = self.sent.lock().expect("sent");
        sent.extend(statements.into_iter().map(str::to_owned));
    }
}

fn texts(statements: &[Statement]) -> impl Iterator<Item = &'static str> + '_ {
    statements.iter().map(Statement::sql)
}

impl TxBackend for RecordingTx {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.record([sql]);
        Box::pin(self.inner.execute(sql, params))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        self.record([sql]);
        Box::pin(self.inner.query(sql, params))
    }

    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.record([sql]);
        Box::pin(self.inner.batch(sql))
    }

    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        self.record(texts(statements));
        Box::pin(self.inner.pipeline(statements))
    }

    fn commit_after(
        self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.record(texts(&statements).chain(["COMMIT"]));
        Box::pin(self.inner.commit_after(statements))
    }

    fn commit_then(
        self: Box<Self>,
        statements: Vec<Statement>,
        then: Then,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.record(texts(&statements));
        let sent = self.sent.clone();
        let then: Then = Box::new(move |done| {
            let more = then(done)?;
            let mut sent = sent.lock().expect("sent");
            sent.extend(texts(&more).chain(["COMMIT"]).map(str::to_owned));
            Ok(more)
        });
        Box::pin(self.inner.commit_then(statements, then))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        self.record(["COMMIT"]);
        Box::pin(self.inner.commit())
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        self.record(["ROLLBACK"]);
        Box::pin(self.inner.rollback())
    }
}
