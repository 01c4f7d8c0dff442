//! The safe-ops tools, as in the seed: `delete_file` (checkbox), `drop_table`
//! (type-to-confirm) and `deploy` (a form with a business rule), each behind guard;
//! `deploy_production`, which two people other than the requester approve on guard's
//! approval page; `delete_files` (a glob, where the human picks which matched files go); and
//! `read_build_log`, which changes nothing but may disclose secrets, so it asks too; and
//! `create_download_link`, which hands out a link anyone holding it can use, so it asks first.
//!
//! Production is a tool of its own rather than an `environment` value of `deploy`: the two
//! ask for different things (a form the requester fills in the client, against approvals
//! by other people on a page), the allowlist can publish one without the other, and the
//! tool list tells the model up front that production is guarded differently. `deploy`
//! takes `staging` only and answers any spelling of production by naming `deploy_production`.
//!
//! The server and its tools are here; what the tools take (arguments, forms and the rules
//! they are checked by) is in `args`, and what the human is shown before an effect in
//! `previews`.

mod args;
mod previews;

use std::{
    path::Path,
    sync::{Arc, Mutex, MutexGuard},
};

#[cfg(feature = "approval")]
use rmcp::{
    ErrorData, RoleServer,
    model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams},
    service::RequestContext,
};
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Boundary, Confirmed, Disclosed, Exposure, FormEnum, Guard, Guarded, Preview, ToolError,
    batch::{Batch, Picked, Report},
    db::{ReadDb, trash::TrashedTable},
    destructive, exposed,
    forms::TypeToConfirm,
    read_only,
    sandbox::{Pin, Trashed},
    undo::{Purger, Reversible, Window},
};
use rusqlite::Connection;

use crate::{
    builds::{self, ReadBuildLogArgs},
    db,
    downloads::{self, CreateDownloadLinkArgs, Links},
    sandbox::Sandbox,
};

/// The safe-ops server: a sandbox directory, an SQLite database, and the download links it
/// serves, if it serves any.
#[derive(Clone)]
pub struct SafeOps {
    sandbox: Sandbox,
    db: Arc<Mutex<Connection>>,
    guard: Arc<Guard>,
    downloads: Option<Links>,
}

impl Guarded for SafeOps {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

pub use args::{
    ApprovalLevel, DeleteConfirmation, DeleteFileArgs, DeleteFilesArgs, DeployArgs, DeployConfig,
    DeployProductionArgs, DropTableArgs, DropTableConfirmation,
};
use args::{check_name, urgent_needs_rollback_plan};
use previews::staging_only;
pub use previews::{preview_delete, preview_delete_files};

/// The only environment `deploy` deploys to.
const STAGING: &str = "staging";

/// The allowlist that ships with the example: every tool it defines.
pub const DEFAULT_ALLOWLIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/allowlist.toml");

impl SafeOps {
    /// Opens the sandbox and the database (created and seeded on first start; in read-only
    /// mode it must already exist and is opened read-only). A guard without an exposure
    /// gets the shipped allowlist.
    pub fn open(root: &Path, db_path: &Path, guard: Guard) -> Result<Self, String> {
        let guard = match guard.exposure() {
            Some(_) => guard,
            None => guard.with_exposure(Exposure::allowlist(DEFAULT_ALLOWLIST)),
        };
        // Read-only mode opens no read-write connection at all: a missing database is an
        // error, not a fresh seeded file, and an existing one is left byte for byte as it is.
        // The sandbox root likewise must exist in read-only mode; it is never created.
        let read_only = guard.exposure().is_some_and(|e| e.is_read_only());
        let conn = if read_only {
            db::open_read_only(db_path)?
        } else {
            db::open(db_path)
                .map_err(|e| format!("cannot open database {}: {e}", db_path.display()))?
        };
        let sandbox = if read_only {
            Sandbox::existing(root).map_err(|e| {
                format!(
                    "cannot open sandbox root {} ({e}); read-only mode never creates one. Start safe-ops once without --read-only, or create the directory",
                    root.display()
                )
            })?
        } else {
            Sandbox::new(root)
                .map_err(|e| format!("cannot use sandbox root {}: {e}", root.display()))?
        };
        Ok(Self {
            sandbox,
            db: Arc::new(Mutex::new(conn)),
            guard: Arc::new(guard.with_sqlite(db_path)),
            downloads: None,
        })
    }

    /// The server whose `create_download_link` makes links the endpoint that signs with
    /// `links` serves (`downloads::serve`); without it the tool makes none.
    pub fn with_downloads(mut self, links: Links) -> Self {
        self.downloads = Some(links);
        self
    }

    /// Purges what deletes and drops left in their trash once their undo window closed,
    /// every `every`, while the returned purger lives; `None` if the guard keeps no undo
    /// windows.
    pub fn purge_undo_windows(&self, every: std::time::Duration) -> Option<Purger> {
        rmcp_guard::purge_undo_windows(self.clone(), Self::tool_router, every)
    }

    /// One purge pass, of the windows the store's clock says closed; how many it purged.
    pub async fn purge_due_undo_windows(&self) -> Result<u64, String> {
        rmcp_guard::purge_due_undo_windows(self, Self::tool_router)
            .await
            .map_err(|e| e.to_string())
    }

    pub fn guard_config(&self) -> &Arc<Guard> {
        &self.guard
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    fn db(&self) -> MutexGuard<'_, Connection> {
        self.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn build_log_boundary(&self, args: &ReadBuildLogArgs) -> Result<Boundary, ToolError> {
        builds::boundary(&self.sandbox, args)
    }

    async fn download_link_boundary(
        &self,
        args: &CreateDownloadLinkArgs,
    ) -> Result<Boundary, ToolError> {
        downloads::boundary(&self.sandbox, self.downloads.as_ref(), args)
    }

    async fn preview_delete(&self, args: &DeleteFileArgs) -> Result<Preview, ToolError> {
        preview_delete(&self.sandbox, &args.path)
    }

    /// Undoes a `delete_file`: the trashed file goes back under its name, unless a new file
    /// took the name since (`STATE_CHANGED`, nothing overwritten).
    async fn undo_delete(&self, window: Window) -> Result<serde_json::Value, ToolError> {
        let trashed: Trashed = window.data()?;
        let restored = self.sandbox.restore(&trashed)?;
        Ok(serde_json::json!({"restored": restored.path().to_string(), "bytes": restored.size()}))
    }

    /// Makes a `delete_file` final once its undo window closed: the trashed copy goes.
    async fn purge_delete(&self, window: Window) -> Result<(), String> {
        let trashed: Trashed = window.data().map_err(|e| e.message().to_owned())?;
        self.sandbox.purge(&trashed).map_err(|e| e.to_string())
    }

    /// Undoes a `drop_table`: the table comes back under its name with its rows, unless a
    /// new table took the name since (`STATE_CHANGED`, nothing replaced).
    async fn undo_drop(&self, window: Window) -> Result<serde_json::Value, ToolError> {
        let dropped: TrashedTable = window.data()?;
        let rows = dropped.restore(&self.db())?;
        Ok(serde_json::json!({"restored": dropped.table(), "rows": rows}))
    }

    /// Makes a `drop_table` final once its undo window closed: the trashed table goes.
    async fn purge_drop(&self, window: Window) -> Result<(), String> {
        let dropped: TrashedTable = window.data().map_err(|e| e.message().to_owned())?;
        dropped
            .purge(&self.db())
            .map_err(|e| e.message().to_owned())
    }

    async fn preview_delete_files(&self, args: &DeleteFilesArgs) -> Result<Batch, ToolError> {
        preview_delete_files(&self.sandbox, &args.pattern)
    }

    async fn preview_drop(&self, args: &DropTableArgs) -> Result<Preview, ToolError> {
        check_name("table", &args.table)?;
        let conn = self.db();
        match db::table_rows(&conn, &args.table).map_err(ToolError::internal)? {
            None => Ok(Preview::nothing(format!(
                "Table `{}` does not exist, nothing to drop.",
                args.table
            ))),
            Some(rows) => Ok(Preview::effect(
                args.table.clone(),
                format!(
                    "⚠️ Dangerous: drop table `{}` from the safe-ops database, with all its {rows} \
                     rows.",
                    args.table
                ),
            )),
        }
    }

    async fn preview_deploy(&self, args: &DeployArgs) -> Result<Preview, ToolError> {
        check_name("service", &args.service)?;
        if let Some(environment) = args.environment.as_deref()
            && environment != STAGING
        {
            return staging_only(&args.service, environment);
        }
        let previous = self.deployments(&args.service, None)?;
        Ok(Preview::effect(
            args.service.clone(),
            format!(
                "Deploy service `{}` (deployment #{} on record). Fill in the approval level and a rollback plan.",
                args.service,
                previous + 1
            ),
        ))
    }

    async fn preview_deploy_production(
        &self,
        args: &DeployProductionArgs,
    ) -> Result<Preview, ToolError> {
        check_name("service", &args.service)?;
        let previous = self.deployments(&args.service, Some(PRODUCTION_LEVEL))?;
        Ok(Preview::effect(
            args.service.clone(),
            format!(
                "Deploy service `{}` to production (production deployment #{} on record).",
                args.service,
                previous + 1
            ),
        ))
    }

    /// How many deployments of `service` are on record (at `level`, if given).
    fn deployments(&self, service: &str, level: Option<&str>) -> Result<i64, ToolError> {
        self.db()
            .query_row(
                "SELECT count(*) FROM deployments WHERE service = ?1 AND (?2 IS NULL OR approval_level = ?2)",
                (service, level),
                |r| r.get(0),
            )
            .map_err(ToolError::internal)
    }
}

/// The approval level a production deployment is recorded with.
const PRODUCTION_LEVEL: &str = "production (two approvers)";

#[tool_router]
impl SafeOps {
    /// Delete a file inside the sandbox root. The user confirms in a form first; the
    /// deletion can be undone with `undo` for 10 minutes.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        undo = Self::undo_delete,
        undo_within = "10m",
        purge = Self::purge_delete,
        grant = "10m",
        grant_calls = 5,
        on_decline = "The user declined; nothing was deleted.",
        on_cancel = "The confirmation was cancelled; nothing was deleted."
    )]
    #[tool]
    async fn delete_file(
        &self,
        // The path is in the pin the preview made: the handler acts on that, not on this.
        Parameters(_args): Parameters<DeleteFileArgs>,
        confirmed: Confirmed<DeleteConfirmation>,
    ) -> Result<Reversible<String, Trashed>, ToolError> {
        // The confirmed target is the pin of the file the human was shown: the sandbox opens
        // its parent through the root handle and moves the entry into its trash only if it
        // is still that file, so nothing between the re-check and here can redirect it.
        let pin: Pin = confirmed.target().parse()?;
        let trashed = self.sandbox.trash(&pin)?;
        let reason = confirmed
            .reason
            .as_deref()
            .map(|r| format!(" Reason: {r}."))
            .unwrap_or_default();
        Ok(Reversible::new(
            format!("Deleted {}.{reason}", trashed.path()),
            trashed,
        ))
    }

    /// Delete the files a glob matches inside the sandbox root. The user picks which of them
    /// go; the others are not touched.
    #[destructive(
        batch,
        preview = Self::preview_delete_files,
        on_decline = "The user declined; nothing was deleted.",
        on_cancel = "The confirmation was cancelled; nothing was deleted."
    )]
    #[tool]
    async fn delete_files(
        &self,
        // The paths are in the pins the preview made: the handler acts on those.
        Parameters(_args): Parameters<DeleteFilesArgs>,
        picked: Picked,
    ) -> Report {
        let sandbox = &self.sandbox;
        // Each pin names the file the human picked; the sandbox deletes the entry only if it
        // is still that file, so a swap after the re-check is skipped, not deleted.
        picked
            .act(|item| async move {
                let pin: Pin = item.state().parse()?;
                let removed = sandbox.remove(&pin)?;
                Ok(format!("Deleted {}.", removed.path()))
            })
            .await
    }

    /// Drop a table from the database. The user must type the table name to confirm; the
    /// drop can be undone with `undo` for 10 minutes.
    #[destructive(
        confirm = "type_to_confirm",
        target = table,
        preview = Self::preview_drop,
        undo = Self::undo_drop,
        undo_within = "10m",
        purge = Self::purge_drop,
        on_decline = "The user declined; no table was dropped.",
        on_cancel = "The confirmation was cancelled; no table was dropped."
    )]
    #[tool]
    async fn drop_table(
        &self,
        Parameters(args): Parameters<DropTableArgs>,
        confirmed: Confirmed<DropTableConfirmation>,
    ) -> Result<Reversible<String, TrashedTable>, ToolError> {
        // The table keeps its rows under a name in the trash until the window closes.
        let dropped = TrashedTable::take(&self.db(), &args.table)?;
        Ok(Reversible::new(
            format!(
                "Dropped table {} ({} rows). Approver: {}.",
                dropped.table(),
                dropped.rows(),
                confirmed.approver
            ),
            dropped,
        ))
    }

    /// Deploy a service. The user supplies the approval level and a rollback plan.
    #[destructive(
        form = DeployConfig,
        preview = Self::preview_deploy,
        validate = urgent_needs_rollback_plan,
        on_decline = "The user declined; nothing was deployed.",
        on_cancel = "The deployment was cancelled; nothing was deployed."
    )]
    #[tool]
    async fn deploy(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        confirmed: Confirmed<DeployConfig>,
    ) -> Result<String, ToolError> {
        let level = confirmed.approval_level.as_wire();
        self.db()
            .execute(
                "INSERT INTO deployments (service, approval_level, rollback_plan) VALUES (?1, ?2, ?3)",
                (&args.service, level, &confirmed.rollback_plan),
            )
            .map_err(ToolError::internal)?;
        self.guard.outbox().send(
            "deployments",
            serde_json::json!({"service": args.service, "approval_level": level}),
        );
        Ok(format!(
            "Deployment of {} submitted ({level}); rollback plan recorded.",
            args.service
        ))
    }

    /// Deploy a service to production. Two people other than the requester approve it on
    /// the approval page, each retyping the service name.
    #[destructive(
        approve = "url",
        approvers = 2,
        confirm = "type_to_confirm",
        target = service,
        preview = Self::preview_deploy_production,
        message = "Production deploy: two people other than the requester must approve.",
        on_decline = "The user declined to open the approval page; nothing was deployed.",
        on_cancel = "The production deployment was cancelled; nothing was deployed."
    )]
    #[tool]
    async fn deploy_production(
        &self,
        Parameters(args): Parameters<DeployProductionArgs>,
        _confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        self.db()
            .execute(
                "INSERT INTO deployments (service, approval_level, rollback_plan) VALUES (?1, ?2, '')",
                (&args.service, PRODUCTION_LEVEL),
            )
            .map_err(ToolError::internal)?;
        self.guard.outbox().send(
            "deployments",
            serde_json::json!({"service": args.service, "approval_level": PRODUCTION_LEVEL}),
        );
        Ok(format!(
            "Deployment of {} to production submitted, approved by two people on the approval page.",
            args.service
        ))
    }

    /// Show the build log of a CI job (`builds/<job>.log`), or its last lines.
    #[read_only(
        discloses = "credentials",
        boundary = Self::build_log_boundary,
        max_items = 2000,
        max_bytes = 262144,
        session_max_items = 10000,
        grant = "10m",
        grant_calls = 5
    )]
    #[tool]
    async fn read_build_log(
        &self,
        Parameters(args): Parameters<ReadBuildLogArgs>,
    ) -> Result<Disclosed<String>, ToolError> {
        match builds::lines(&self.sandbox, &args)? {
            Some((_, lines)) => Ok(Disclosed::new(lines.len() as u64, lines.join("\n"))),
            None => Err(ToolError::new(
                rmcp_guard::Code::StateChanged,
                format!(
                    "The log of build job {} is gone since the user approved; nothing was shown.",
                    args.job
                ),
            )),
        }
    }

    /// Create a link that downloads a file of the sandbox (valid 15 minutes unless `minutes`
    /// says otherwise, at most 60). Whoever holds the link downloads the file without asking
    /// anyone; it stops working when it expires, when the file changes, or when safe-ops
    /// stops (its signing key lives in memory only).
    #[read_only(
        discloses = "capability",
        boundary = Self::download_link_boundary,
        max_items = 1,
        session_max_items = 10
    )]
    #[tool]
    async fn create_download_link(
        &self,
        Parameters(args): Parameters<CreateDownloadLinkArgs>,
    ) -> Result<Disclosed<String>, ToolError> {
        let answer = downloads::create(&self.sandbox, self.downloads.as_ref(), &args)?;
        Ok(Disclosed::new(1, answer))
    }

    /// List the database tables and their row counts.
    #[read_only]
    #[tool]
    async fn list_tables(&self, db: ReadDb) -> Result<String, ToolError> {
        let mut lines = Vec::new();
        for table in db::tables(&db)? {
            let rows = db::table_rows(&db, &table)?.unwrap_or(0);
            lines.push(format!("{table}: {rows} rows"));
        }
        Ok(lines.join("\n"))
    }
}

/// rmcp routes to the tools the allowlist (and read-only mode) leave enabled; any other
/// name is answered exactly like a tool that does not exist. On 2026-07-28 a client that
/// declares the Tasks extension gets `deploy_production` as a task it polls while the two
/// approvers decide (`rmcp_guard::tasks`); other clients get MRTR rounds.
#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for SafeOps {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        #[cfg(feature = "approval")]
        let capabilities = rmcp_guard::tasks::advertise(capabilities);
        ServerConfig::new(capabilities).with_server_info(rmcp::model::Implementation::new(
            "safe-ops",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    #[cfg(feature = "approval")]
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        rmcp_guard::tasks::get(self, request, context).await
    }

    #[cfg(feature = "approval")]
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        rmcp_guard::tasks::update(self, request, context).await
    }

    #[cfg(feature = "approval")]
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        rmcp_guard::tasks::cancel(self, request, context).await
    }
}
