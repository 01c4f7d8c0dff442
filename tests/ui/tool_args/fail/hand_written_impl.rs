// `ToolArgs` is the derive's verdict; implementing it by hand would skip every check.

use rmcp_guard::ToolArgs;

struct DeleteArgs {
    #[allow(dead_code)]
    confirmed: bool,
}

impl ToolArgs for DeleteArgs {}

fn main() {}
