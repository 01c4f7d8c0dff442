//! What a feature declares about its ledger rows, and the checks that follow from it, in a
//! form neither engine's: `{ne}` stands for a comparison that treats NULL as a value
//! (SQLite's `IS NOT`, PostgreSQL's `IS DISTINCT FROM`), `{now}` for the database's clock
//! and `{row}` for the row as a message names it (with its key on PostgreSQL). A feature's
//! own rule may read its other tables: `{table:name}` names one (PostgreSQL reads it in the
//! trigger's own schema), `{lock}` locks the rows read on PostgreSQL (SQLite has one
//! writer), and `{json_texts}(column{as_json})` lists the texts of a JSON array column.

/// One table of ledger rows and the rules the database holds it to.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// The table.
    pub table: &'static str,
    /// What one row is called in messages ("undo window").
    pub row: &'static str,
    /// The columns that name a row (PostgreSQL's messages show them).
    pub key: &'static [&'static str],
    /// Whose a row is (canonical tenant and user); empty for a row no one owns.
    pub owner: &'static [&'static str],
    /// How a row's status moves.
    pub status: Status,
    /// What a new row must hold; `None` when any row may be inserted.
    pub opens: Option<Opens>,
    /// The columns besides key and owner that never change.
    pub fixed: &'static [&'static str],
    /// How messages name the columns that never change ("owner, data and deadline").
    pub fixed_words: &'static str,
    /// The feature's own rules.
    pub rules: &'static [Rule],
    /// When a row may be deleted.
    pub kept: Kept,
    /// How PostgreSQL classes a refusal.
    pub refusal: Refusal,
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
    /// No status: a row never ends (a budget starts its next period in place; an approval
    /// link, used or not, counts the decisions refused through it).
    Renewed,
    /// A row is final as it was inserted and never changes (a spent request state, a
    /// decision): every update is refused.
    Final {
        /// What a row is, in messages ("spent").
        ended: &'static str,
        hint: &'static str,
    },
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

/// A feature's own rule: the statement `on` is refused when `when` holds.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The rule's name; the trigger that holds it on SQLite is `<table>_<name>`.
    pub name: &'static str,
    /// The statement it guards.
    pub on: Event,
    /// The refused row, over `NEW` and `OLD`.
    pub when: When,
    /// What the refusal says, with `{row}` where the row goes.
    pub words: &'static str,
}

/// A rule's condition.
#[derive(Debug)]
pub(crate) enum When {
    /// The same words on both engines.
    Both(&'static str),
    /// Each engine's own words, where they differ beyond the placeholders (JSON).
    Each {
        sqlite: &'static str,
        postgres: &'static str,
    },
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
    /// Once the row ended, or `column` passed by the database's clock.
    WhileLive {
        column: &'static str,
        words: &'static str,
    },
    /// Only with its row in `parent` (the foreign key's cascade): never while that row is
    /// there. `column` names the parent row in both tables; `words` say what it is.
    WithParent {
        parent: &'static str,
        column: &'static str,
        words: &'static str,
    },
}

/// How PostgreSQL classes a refusal (SQLite's is always a constraint failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `insufficient_privilege`: nobody may do that, guard included.
    Privilege,
    /// `integrity_constraint_violation` (class 23): guard itself meets it when another
    /// process changed the row first, and reads it as the state having changed.
    Constraint,
}

/// The statement a check guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Insert,
    Update,
    Delete,
}

/// A check's condition, in neither engine's syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Condition {
    /// Over the row alone.
    Row(String),
    /// Reading other tables or parsing values: PostgreSQL runs it as a query of its own,
    /// and refuses a row whose values it cannot read.
    Reads { sqlite: String, postgres: String },
}

impl Condition {
    fn of(when: &When) -> Self {
        match when {
            When::Both(text) if !text.contains("{table:") => Condition::Row((*text).to_owned()),
            When::Both(text) => Condition::Reads {
                sqlite: (*text).to_owned(),
                postgres: (*text).to_owned(),
            },
            When::Each { sqlite, postgres } => Condition::Reads {
                sqlite: (*sqlite).to_owned(),
                postgres: (*postgres).to_owned(),
            },
        }
    }
}

/// One refusal the rules hold, in neither engine's syntax.
#[derive(Debug)]
pub(super) struct Check {
    /// Its name within the table's rules.
    pub name: &'static str,
    pub event: Event,
    /// The refused statement's condition; `None` refuses every one.
    pub when: Option<Condition>,
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
        checks.extend(self.own(Event::Insert));
        checks.extend(self.ending());
        let unchanging: Vec<String> = self
            .unchanging()
            .map(|c| format!("NEW.{c} {{ne}} OLD.{c}"))
            .collect();
        // A final row refuses every update already.
        if !matches!(self.status, Status::Final { .. }) && !unchanging.is_empty() {
            checks.push(Check {
                name: "fixed",
                event: Event::Update,
                when: Some(Condition::Row(unchanging.join(" OR "))),
                message: format!("the {} of the {{row}} are immutable", self.fixed_words),
                hint: None,
            });
        }
        checks.extend(self.own(Event::Update));
        checks.push(self.keeping());
        checks.extend(self.own(Event::Delete));
        checks
    }

    /// The feature's own rules on `event`.
    fn own(&self, event: Event) -> impl Iterator<Item = Check> + '_ {
        self.rules
            .iter()
            .filter(move |rule| rule.on == event)
            .map(|rule| Check {
                name: rule.name,
                event: rule.on,
                when: Some(Condition::of(&rule.when)),
                message: rule.words.to_owned(),
                hint: None,
            })
    }

    /// When a row may go.
    fn keeping(&self) -> Check {
        let (when, message) = match self.kept {
            Kept::History => (None, "the {row} is history and is never deleted".to_owned()),
            Kept::UntilExpired { column, words } => (
                Some(Condition::Row(format!("OLD.{column} > {{now}}"))),
                format!("the {{row}} is kept until {words}"),
            ),
            Kept::WhileLive { column, words } => {
                let live = match self.status {
                    Status::Column {
                        column: status,
                        initial,
                        ..
                    } => format!("OLD.{status} = '{initial}' AND "),
                    Status::Until { column: until, .. } => format!("OLD.{until} IS NULL AND "),
                    Status::Renewed | Status::Final { .. } => String::new(),
                };
                (
                    Some(Condition::Row(format!("{live}OLD.{column} > {{now}}"))),
                    format!("the {{row}} is kept until it ended or {words}"),
                )
            }
            Kept::WithParent {
                parent,
                column,
                words,
            } => {
                let there = format!(
                    "EXISTS (SELECT 1 FROM {{table:{parent}}} p WHERE p.{column} = OLD.{column})"
                );
                (
                    Some(Condition::Reads {
                        sqlite: there.clone(),
                        postgres: there,
                    }),
                    format!("the {{row}} is deleted only with its {words}"),
                )
            }
        };
        Check {
            name: "kept",
            event: Event::Delete,
            when,
            message,
            hint: None,
        }
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
            Status::Until { .. } | Status::Renewed | Status::Final { .. } => None,
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
            when: Some(Condition::Row(when)),
            message: format!("a new {{row}} must be {}", opens.words),
            hint: None,
        }
    }

    /// A row that ended never changes; a status moves only to one of its ends.
    fn ending(&self) -> Vec<Check> {
        let ended = |when: Option<String>, ended: &str, hint| Check {
            name: "ended",
            event: Event::Update,
            when: when.map(Condition::Row),
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
                    ended(
                        Some(format!("OLD.{column} {{ne}} '{initial}'")),
                        words,
                        hint,
                    ),
                    Check {
                        name: "moves",
                        event: Event::Update,
                        when: Some(Condition::Row(format!(
                            "NEW.{column} NOT IN ('{initial}', {})",
                            quoted.join(", ")
                        ))),
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
            } => vec![ended(
                Some(format!("OLD.{column} IS NOT NULL")),
                words,
                hint,
            )],
            Status::Final { ended: words, hint } => vec![ended(None, words, hint)],
            Status::Renewed => Vec::new(),
        }
    }
}

/// `text` with each `{table:name}` replaced by `name` as `spell` writes it.
pub(super) fn tables(text: &str, spell: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("{table:") {
        out.push_str(&rest[..at]);
        let name = &rest[at + "{table:".len()..];
        let end = name.find('}').unwrap_or(name.len());
        out.push_str(&spell(&name[..end]));
        rest = name.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
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
        refusal: Refusal::Privilege,
    };

    fn row(text: &str) -> Option<Condition> {
        Some(Condition::Row(text.to_owned()))
    }

    #[test]
    fn a_declaration_makes_each_check_once() {
        let checks = WINDOWS.checks();
        let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        assert_eq!(names, ["opens", "ended", "moves", "fixed", "kept"]);
        assert_eq!(
            checks[0].when,
            row("NEW.status {ne} 'OPEN' OR NEW.n {ne} 0 OR NEW.result IS NOT NULL")
        );
        assert_eq!(
            checks[2].message,
            "the {row} moves from OPEN only to DONE or GONE"
        );
        assert_eq!(
            checks[3].when,
            row(
                "NEW.id {ne} OLD.id OR NEW.tenant {ne} OLD.tenant OR NEW.user_id {ne} OLD.user_id \
                 OR NEW.data {ne} OLD.data"
            )
        );
        assert_eq!(either(&["A", "B", "C"]), "A, B or C");
        assert_eq!(
            tables("FROM {table:a} x JOIN {table:b} y", |t| format!("s.{t}")),
            "FROM s.a x JOIN s.b y"
        );
    }

    /// A final row refuses every update and has no columns to keep fixed; it goes only with
    /// its parent; a feature's rules land on their statements, a rule reading another table
    /// as one that reads.
    #[test]
    fn final_rows_own_rules_and_parents_make_their_checks() {
        const DECISIONS: Ledger = Ledger {
            table: "d",
            row: "decision",
            key: &["parent_id", "who"],
            owner: &[],
            status: Status::Final {
                ended: "taken",
                hint: "It stands.",
            },
            opens: None,
            fixed: &[],
            fixed_words: "",
            rules: &[
                Rule {
                    name: "in_time",
                    on: Event::Insert,
                    when: When::Both("NOT EXISTS (SELECT 1 FROM {table:p} WHERE ok)"),
                    words: "the {row} comes in time",
                },
                Rule {
                    name: "plain",
                    on: Event::Insert,
                    when: When::Both("NEW.who = ''"),
                    words: "the {row} names someone",
                },
            ],
            kept: Kept::WithParent {
                parent: "p",
                column: "parent_id",
                words: "parent",
            },
            refusal: Refusal::Constraint,
        };
        let checks = DECISIONS.checks();
        let names: Vec<(&str, Event)> = checks.iter().map(|c| (c.name, c.event)).collect();
        assert_eq!(
            names,
            [
                ("in_time", Event::Insert),
                ("plain", Event::Insert),
                ("ended", Event::Update),
                ("kept", Event::Delete)
            ]
        );
        assert!(matches!(checks[0].when, Some(Condition::Reads { .. })));
        assert_eq!(checks[1].when, row("NEW.who = ''"));
        assert_eq!(checks[2].when, None);
        assert_eq!(checks[2].message, "the {row} is taken and may not change");
        assert_eq!(
            checks[3].when,
            Some(Condition::Reads {
                sqlite: "EXISTS (SELECT 1 FROM {table:p} p WHERE p.parent_id = OLD.parent_id)"
                    .to_owned(),
                postgres: "EXISTS (SELECT 1 FROM {table:p} p WHERE p.parent_id = OLD.parent_id)"
                    .to_owned(),
            })
        );
    }

    /// A live row is kept until its deadline; an ended one may go.
    #[test]
    fn a_live_row_is_kept_until_its_deadline() {
        let pending = Ledger {
            kept: Kept::WhileLive {
                column: "expires_at",
                words: "its deadline passed",
            },
            ..WINDOWS
        };
        let kept = pending.checks().pop().unwrap();
        assert_eq!(
            kept.when,
            row("OLD.status = 'OPEN' AND OLD.expires_at > {now}")
        );
        assert_eq!(
            kept.message,
            "the {row} is kept until it ended or its deadline passed"
        );
    }
}
