//! A server with deferred tools, for the tests of deferred calls: `close_account` closes an
//! account of an in-memory ledger two minutes after the human confirms (`close_account_soon`
//! two seconds after), with the reason the human gave; its preview names the account and its
//! balance, so a balance that changes before the call runs is a changed target. A runner
//! pass runs what the database's clock says is due: a test that needs a call due waits for
//! it ([`until`]).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, EnvIdentity, Exposure, Form, Guard, Guarded, Preview, ToolArgs, ToolError,
    destructive, exposed,
    ops::{OperationStore, Operations},
};

/// What the human fills in: why the account closes.
#[derive(Debug, Form)]
pub struct Closing {
    /// Why the account closes (kept with the closing).
    #[form(min_length = 1)]
    pub reason: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
pub struct AccountArgs {
    /// The account to close.
    pub account: String,
}

/// The ledger: accounts and their balances, and every closing that ran (account, reason).
#[derive(Clone)]
pub struct Accounts {
    guard: Arc<Guard>,
    pub balances: Arc<Mutex<BTreeMap<String, i64>>>,
    pub closings: Arc<Mutex<Vec<(String, String)>>>,
}

impl Guarded for Accounts {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router]
impl Accounts {
    /// Close an account, two minutes after the user confirms.
    #[destructive(form = Closing, preview = Self::preview_close, defer = "2m")]
    #[tool]
    async fn close_account(
        &self,
        Parameters(args): Parameters<AccountArgs>,
        confirmed: Confirmed<Closing>,
    ) -> Result<String, ToolError> {
        self.close(&args.account, confirmed.into_form().reason)
    }

    /// Close an account two seconds after the user confirms (for tests that run calls, which
    /// wait until they are due, and should not wait two minutes).
    #[destructive(form = Closing, preview = Self::preview_close, defer = "2s")]
    #[tool]
    async fn close_account_soon(
        &self,
        Parameters(args): Parameters<AccountArgs>,
        confirmed: Confirmed<Closing>,
    ) -> Result<String, ToolError> {
        self.close(&args.account, confirmed.into_form().reason)
    }

    async fn preview_close(&self, args: &AccountArgs) -> Result<Preview, ToolError> {
        match self.balances.lock().unwrap().get(&args.account) {
            Some(balance) => Ok(Preview::effect(
                &args.account,
                format!("Close {} (balance {balance}).", args.account),
            )),
            None => Ok(Preview::nothing(format!(
                "There is no open account {}.",
                args.account
            ))),
        }
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Accounts {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Accounts {
    /// The effect: `account` leaves the ledger, and the closing is kept with `reason`.
    fn close(&self, account: &str, reason: String) -> Result<String, ToolError> {
        if self.balances.lock().unwrap().remove(account).is_none() {
            return Err(ToolError::new(
                rmcp_guard::Code::StateChanged,
                format!("{account} is already closed."),
            ));
        }
        self.closings
            .lock()
            .unwrap()
            .push((account.to_owned(), reason));
        Ok(format!("Closed {account}."))
    }

    /// A server whose calls `user` of `tenant` makes, keeping its deferred calls in `store`,
    /// with the accounts `checking` (balance 100) and `savings` (balance 2500).
    pub fn new(store: impl OperationStore + 'static, tenant: &str, user: &str) -> Self {
        let ledger = Self::ledger();
        Self::on(store, tenant, user, ledger)
    }

    /// The accounts every fresh ledger has.
    pub fn ledger() -> Arc<Mutex<BTreeMap<String, i64>>> {
        Arc::new(Mutex::new(BTreeMap::from([
            ("checking".to_owned(), 100),
            ("savings".to_owned(), 2500),
        ])))
    }

    /// Like [`Accounts::new`], on `balances` (another server's ledger: one world).
    pub fn on(
        store: impl OperationStore + 'static,
        tenant: &str,
        user: &str,
        balances: Arc<Mutex<BTreeMap<String, i64>>>,
    ) -> Self {
        Self::exposed_by(store, tenant, user, balances, Exposure::all_tools())
    }

    /// Like [`Accounts::on`], publishing what `exposure` allows.
    pub fn exposed_by(
        store: impl OperationStore + 'static,
        tenant: &str,
        user: &str,
        balances: Arc<Mutex<BTreeMap<String, i64>>>,
        exposure: Exposure,
    ) -> Self {
        let (tenant, user) = (tenant.to_owned(), user.to_owned());
        let identity = EnvIdentity::from_lookup(move |name| match name {
            EnvIdentity::TENANT_ENV => Some(tenant.clone()),
            EnvIdentity::USER_ENV => Some(user.clone()),
            _ => Some(String::new()),
        })
        .expect("identity");
        let guard = Guard::ephemeral()
            .expect("guard key")
            .with_exposure(exposure)
            .with_operations(Operations::new(store, identity));
        Self {
            guard: Arc::new(guard),
            balances,
            closings: Arc::default(),
        }
    }

    /// The same world (ledger and closings) seen by another person on another guard.
    pub fn as_person(
        &self,
        store: impl OperationStore + 'static,
        tenant: &str,
        user: &str,
    ) -> Self {
        let mut other = Self::on(store, tenant, user, self.balances.clone());
        other.closings = self.closings.clone();
        other
    }

    /// One runner pass: how many calls due by the store's clock it ended.
    pub async fn run_due(&self) -> u64 {
        rmcp_guard_test::testing::run_due_deferred(self, Self::tool_router)
            .await
            .expect("a runner pass")
    }

    /// Runs due calls in the background every `every`, until the runner is dropped.
    pub fn run_in_background(&self, every: std::time::Duration) -> rmcp_guard::defer::Runner {
        rmcp_guard::run_deferred(self.clone(), Self::tool_router, every)
            .expect("a runner: the server has deferred tools and a store")
    }

    /// The closings that ran.
    pub fn closings(&self) -> Vec<(String, String)> {
        self.closings.lock().unwrap().clone()
    }

    /// The balance of `account`, if it is open.
    pub fn balance(&self, account: &str) -> Option<i64> {
        self.balances.lock().unwrap().get(account).copied()
    }
}

/// Returns once the clock (this machine's, which the stores' clocks are) has passed `at`
/// (ms since the Unix epoch): a call due at `at` is then due for a runner.
pub async fn until(at: i64) {
    let left = at + 1 - rmcp_guard::ops::now_ms();
    if left > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(left as u64)).await;
    }
}

/// How long after its scheduling a call of `close_account_soon` is surely due.
pub const SOON_DUE: std::time::Duration = std::time::Duration::from_millis(2_200);
