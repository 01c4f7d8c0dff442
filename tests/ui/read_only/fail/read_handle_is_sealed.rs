// `ReadHandle` is sealed: a write handle cannot be declared a read handle by implementing it.

use rmcp_guard::{db::WriteDb, read_handle::ReadHandle};

struct MyHandle(WriteDb);

impl ReadHandle for MyHandle {}

fn main() {}
