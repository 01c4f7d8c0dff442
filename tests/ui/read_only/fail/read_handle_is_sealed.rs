// `ReadHandle` is sealed: a write handle cannot be declared a read handle by implementing it.

use rmcp_guard::{ReadHandle, db::WriteDb};

struct MyHandle(WriteDb);

impl ReadHandle for MyHandle {}

fn main() {}
