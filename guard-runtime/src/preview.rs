//! What a destructive tool is about to do, computed before the human is asked and again
//! just before the effect runs.

mod target;

pub(crate) use target::Target;

/// The outcome of a tool's `preview` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preview {
    /// A precondition failed (nothing to delete): answer the model and ask nobody.
    Nothing(String),
    /// The concrete effect the human must confirm.
    Effect(Effect),
}

/// The resolved target and what will happen to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// What the effect acts on: the words shown, its hidden state and the scope a grant of
    /// the tool covers (a grant opened on this effect covers later calls whose preview
    /// states the same scope).
    target: Target,
    summary: String,
    /// An `#[ask]` tool's question or a disclosure: nothing changes that could be reversed,
    /// so no terms of reversing are told.
    asks_only: bool,
    /// An `#[ask]` tool's question: nothing is confirmed, so its endings speak of a question.
    question: bool,
}

impl Preview {
    /// Nothing to do: the text goes back to the model as a plain result.
    pub fn nothing(text: impl Into<String>) -> Self {
        Preview::Nothing(text.into())
    }

    /// An effect on `target`; `summary` states the counts and what disappears.
    pub fn effect(target: impl Into<String>, summary: impl Into<String>) -> Self {
        Preview::Effect(Effect {
            target: Target::new(target),
            summary: summary.into(),
            asks_only: false,
            question: false,
        })
    }

    /// An `#[ask]` tool's question, shown as an effect that changes nothing.
    pub(crate) fn question(name: &str, question: String) -> Self {
        Preview::Effect(Effect {
            target: Target::new(name),
            summary: question,
            asks_only: true,
            question: true,
        })
    }

    /// A disclosure: `summary` states the data boundary; nothing changes, so no terms of
    /// reversing are told.
    pub(crate) fn disclosure(target: String, summary: String, state: String) -> Self {
        Preview::Effect(Effect {
            target: Target::new(target).with_state(state),
            summary,
            asks_only: true,
            question: false,
        })
    }

    /// Adds state the human does not read but that must not change before the effect runs
    /// (a modification time, a row version).
    pub fn with_state(self, state: impl Into<String>) -> Self {
        match self {
            Preview::Effect(effect) => Preview::Effect(Effect {
                target: effect.target.with_state(state.into()),
                ..effect
            }),
            nothing => nothing,
        }
    }
}

impl Preview {
    /// States the scope of targets this effect belongs to, in plain words the human reads
    /// (`files directly in reports/`). A tool that declares `grant = ...` offers the human
    /// to let later calls whose preview states the same scope run without asking; a
    /// preview without a scope is never covered by a grant, and offers none.
    pub fn scope(self, words: impl Into<String>) -> Self {
        match self {
            Preview::Effect(effect) => Preview::Effect(Effect {
                target: effect.target.with_scope(words.into()),
                ..effect
            }),
            nothing => nothing,
        }
    }
}

impl Effect {
    /// What the effect acts on, as the human reads it.
    pub fn target(&self) -> &str {
        self.target.shown()
    }

    /// What the effect acts on, each part through its own method.
    pub(crate) fn subject(&self) -> &Target {
        &self.target
    }

    /// What the human is told will happen.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The scope a grant covers, as the preview stated it.
    pub fn scope_words(&self) -> Option<&str> {
        self.target.grant_scope()
    }

    /// Whether this is an `#[ask]` question or a disclosure rather than an effect.
    pub(crate) fn asks_only(&self) -> bool {
        self.asks_only
    }

    /// Whether this is an `#[ask]` question, where nothing is being confirmed.
    pub(crate) fn is_question(&self) -> bool {
        self.question
    }

    /// A digest of everything the human was shown plus the hidden state. It is sealed into
    /// MRTR request state, so the answering round can tell whether the target changed
    /// since the human saw it.
    pub fn fingerprint(&self) -> String {
        self.target.recheck_key(&self.summary)
    }
}

/// What the human is told about reversing an effect, composed by guard from the tool's
/// declaration, never by the author's preview: a question cannot promise an undo that the
/// tool does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terms {
    /// The effect is final once it runs.
    Final,
    /// The owner can undo the effect with the `tool` tool until `deadline` (ms since the
    /// Unix epoch); after it the effect is final.
    Until {
        /// The undo tool's name.
        tool: &'static str,
        /// The deadline (ms since the Unix epoch).
        deadline: i64,
    },
}

impl Terms {
    /// The sentence the question ends with.
    pub fn sentence(&self) -> String {
        match self {
            Terms::Final => "This cannot be undone.".to_owned(),
            Terms::Until { tool, deadline } => {
                let at = crate::rfc3339::minute(*deadline);
                format!("You can undo this until {at} with {tool}; after that it is final.")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Terms;

    #[test]
    fn terms_say_final_or_name_the_tool_and_deadline() {
        assert_eq!(Terms::Final.sentence(), "This cannot be undone.");
        let until = Terms::Until {
            tool: "undo",
            deadline: 1_796_300_000_000,
        };
        assert_eq!(
            until.sentence(),
            "You can undo this until 2026-12-03 12:13 UTC with undo; after that it is final."
        );
    }
}
