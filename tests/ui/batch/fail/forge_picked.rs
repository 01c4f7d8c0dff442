// Only guard builds the `Picked` proof, after the human picked: code cannot mint one to
// reach items nobody picked.

use rmcp_guard::batch::{Item, Picked};

fn main() {
    let picked = Picked::new(vec![Item::new("a", "a")], vec![], 1, String::new());
    let _ = picked;
}
