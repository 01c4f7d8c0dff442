//! What a feature declares about its ledger rows, and the checks that follow from it, in a
//! form neither engine's: `{ne}` stands for a comparison that treats NULL as a value
//! (SQLite's `IS NOT`, PostgreSQL's `IS DISTINCT FROM`), `{now}` for the database's clock
//! and `{row}` for the row as a message names it (with its key on PostgreSQL).

/// One table of ledger rows and the rules the database holds it to.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// The table.
    pub table: &'static str,
    /// What one row is called in messages ("undo window").
    pub row: &'static str,
    /// The columns that name a row (PostgreSQL's messages show them).
    pub key: &'static [&'static str],
    /// Whose a row is (canonical tenant and user).
    pub owner: &'static [&'static str],
    /// How a row's status moves.
    pub status: Status,
    /// What a new row must hold; `None` when any row may be inserted.
    pub opens: Option<Opens>,
    /// The columns besides key and owner that never change.
    pub fixed: &'static [&'static str],
    /// How messages name the columns that never change ("owner, data and deadline").
    pub fixed_words: &'static str,
    /// The feature's own rules on an update.
    pub rules: &'static [Rule],
    /// When a row may be deleted.
    pub kept: Kept,
}

/// How a row's status moves: only forward, and not at all once it ended.
#[derive(Debug)]
pub(crate) enum Status {
    /// A status column: a row starts `initial` and moves once, to one of `ends`.
    Column {
        column: &'static str,
        initial: &'static str,
        ends: &'static [&'static str],
        /// What an ended row is, in messages ("closed").
        ended: &'static str,
        /// What to know about an ended row (PostgreSQL's hint).
        hint: &'static str,
    },
    /// No status column: a row is live until `column` is set (a grant's revocation).
    Until {
        column: &'static str,
        ended: &'static str,
        hint: &'static str,
    },
    /// A row never ends: it starts again in place (a budget's next period).
    Renewed,
}

/// What a new row holds besides its initial status.
#[derive(Debug)]
pub(crate) struct Opens {
    /// Columns with a fixed first value, as SQL literals.
    pub values: &'static [(&'static str, &'static str)],
    /// Columns that are NULL until the row ends.
    pub empty: &'static [&'static str],
    /// How messages say it ("OPEN with no result").
    pub words: &'static str,
}

/// A feature's own rule on an update: refused when `when` holds.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The rule's name; the trigger that holds it on SQLite is `<table>_<name>`.
    pub name: &'static str,
    /// The refused change, over `NEW` and `OLD`.
    pub when: &'static str,
    /// What the refusal says, with `{row}` where the row goes.
    pub words: &'static str,
}

/// When a row may go.
#[derive(Debug)]
pub(crate) enum Kept {
    /// Never: rows are history.
    History,
    /// Once `column` passed by the database's clock; `words` say until when.
    UntilExpired {
        column: &'static str,
        words: &'static str,
    },
}

/// The statement a check guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    Insert,
    Update,
    Delete,
}

/// One refusal the rules hold, in neither engine's syntax.
#[derive(Debug)]
pub(super) struct Check {
    /// Its name within the table's rules.
    pub name: &'static str,
    pub event: Event,
    /// The refused statement's condition; `None` refuses every one.
    pub when: Option<String>,
    /// What the refusal says, with `{row}` where the row goes.
    pub message: String,
    pub hint: Option<&'static str>,
}

impl Ledger {
    /// Every check the declaration makes, inserts first, then updates, then deletes.
    pub(super) fn checks(&self) -> Vec<Check> {
        let mut checks = Vec::new();
        if let Some(opens) = &self.opens {
            checks.push(self.opening(opens));
        }
        checks.extend(self.ending());
        checks.push(Check {
            name: "fixed",
            event: Event::Update,
            when: Some(
                self.unchanging()
                    .map(|c| format!("NEW.{c} {{ne}} OLD.{c}"))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            ),
            message: format!("the {} of the {{row}} are immutable", self.fixed_words),
            hint: None,
        });
        checks.extend(self.rules.iter().map(|rule| Check {
            name: rule.name,
            event: Event::Update,
            when: Some(rule.when.to_owned()),
            message: rule.words.to_owned(),
            hint: None,
        }));
        checks.push(match self.kept {
            Kept::History => Check {
                name: "kept",
                event: Event::Delete,
                when: None,
                message: "the {row} is history and is never deleted".to_owned(),
                hint: None,
            },
            Kept::UntilExpired { column, words } => Check {
                name: "kept",
                event: Event::Delete,
                when: Some(format!("OLD.{column} > {{now}}")),
                message: format!("the {{row}} is kept until {words}"),
                hint: None,
            },
        });
        checks
    }

    /// The columns that never change: the key, the owner and the declared ones, each once.
    fn unchanging(&self) -> impl Iterator<Item = &'static str> + '_ {
        let mut seen = Vec::new();
        self.key
            .iter()
            .chain(self.owner)
            .chain(self.fixed)
            .copied()
            .filter(move |c| {
                let new = !seen.contains(c);
                seen.push(*c);
                new
            })
    }

    fn opening(&self, opens: &Opens) -> Check {
        let status = match self.status {
            Status::Column {
                column, initial, ..
            } => Some(format!("NEW.{column} {{ne}} '{initial}'")),
            Status::Until { .. } | Status::Renewed => None,
        };
        let when = status
            .into_iter()
            .chain(
                opens
                    .values
                    .iter()
                    .map(|(c, v)| format!("NEW.{c} {{ne}} {v}")),
            )
            .chain(opens.empty.iter().map(|c| format!("NEW.{c} IS NOT NULL")))
            .collect::<Vec<_>>()
            .join(" OR ");
        Check {
            name: "opens",
            event: Event::Insert,
            when: Some(when),
            message: format!("a new {{row}} must be {}", opens.words),
            hint: None,
        }
    }

    /// A row that ended never changes; a status moves only to one of its ends.
    fn ending(&self) -> Vec<Check> {
        let ended = |when: String, ended: &str, hint| Check {
            name: "ended",
            event: Event::Update,
            when: Some(when),
            message: format!("the {{row}} is {ended} and may not change"),
            hint: Some(hint),
        };
        match self.status {
            Status::Column {
                column,
                initial,
                ends,
                ended: words,
                hint,
            } => {
                let quoted: Vec<String> = ends.iter().map(|s| format!("'{s}'")).collect();
                vec![
                    ended(format!("OLD.{column} {{ne}} '{initial}'"), words, hint),
                    Check {
                        name: "moves",
                        event: Event::Update,
                        when: Some(format!(
                            "NEW.{column} NOT IN ('{initial}', {})",
                            quoted.join(", ")
                        )),
                        message: format!(
                            "the {{row}} moves from {initial} only to {}",
                            either(ends)
                        ),
                        hint: None,
                    },
                ]
            }
            Status::Until {
                column,
                ended: words,
                hint,
            } => vec![ended(format!("OLD.{column} IS NOT NULL"), words, hint)],
            Status::Renewed => Vec::new(),
        }
    }
}

/// `A`, `A or B`, `A, B or C`.
fn either(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOWS: Ledger = Ledger {
        table: "t",
        row: "window",
        key: &["id"],
        owner: &["tenant", "user_id"],
        status: Status::Column {
            column: "status",
            initial: "OPEN",
            ends: &["DONE", "GONE"],
            ended: "closed",
            hint: "It stays closed.",
        },
        opens: Some(Opens {
            values: &[("n", "0")],
            empty: &["result"],
            words: "OPEN with no result",
        }),
        fixed: &["id", "data"],
        fixed_words: "owner and data",
        rules: &[],
        kept: Kept::History,
    };

    #[test]
    fn a_declaration_makes_each_check_once() {
        let checks = WINDOWS.checks();
        let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        assert_eq!(names, ["opens", "ended", "moves", "fixed", "kept"]);
        assert_eq!(
            checks[0].when.as_deref(),
            Some("NEW.status {ne} 'OPEN' OR NEW.n {ne} 0 OR NEW.result IS NOT NULL")
        );
        assert_eq!(
            checks[2].message,
            "the {row} moves from OPEN only to DONE or GONE"
        );
        assert_eq!(
            checks[3].when.as_deref(),
            Some(
                "NEW.id {ne} OLD.id OR NEW.tenant {ne} OLD.tenant OR NEW.user_id {ne} OLD.user_id \
                 OR NEW.data {ne} OLD.data"
            )
        );
        assert_eq!(either(&["A", "B", "C"]), "A, B or C");
    }
}
