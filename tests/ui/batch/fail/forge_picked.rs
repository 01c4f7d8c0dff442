// Only guard builds the `Picked` proof, after the human picked: code cannot mint one, nor a
// report, to reach items nobody picked.

use rmcp_guard::batch::{Item, Picked, Report};

fn main() {
    let picked = Picked::new(vec![Item::new("a", "a")], vec![], 1, String::new());
    let report = Report { items: vec![], offered: 0 };
    let _ = (picked, report);
}
