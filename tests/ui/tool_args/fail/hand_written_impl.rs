// `ToolArgs` is the derive's verdict; implementing it by hand would skip every check.

use guard_runtime::ToolArgs;

struct DeleteArgs {
    #[allow(dead_code)]
    confirmed: bool,
}

impl ToolArgs for DeleteArgs {}

fn main() {}
