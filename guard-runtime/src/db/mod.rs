//! Database handles that guard gives to tools. Read handles are read-only in the database
//! engine itself, so a buggy read tool cannot write: there is no SQL string to inspect.

#[cfg(feature = "postgres")]
mod pg;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub mod trash;

#[cfg(feature = "postgres")]
pub use pg::PgReadDb;
#[cfg(feature = "sqlite")]
pub use sqlite::{ReadDb, SqliteDatabase, WriteDb};
