//! People compared as people: the one place guard decides whether two names are one person.
//!
//! A name from an identity provider or a configuration is text, and text has many spellings
//! of one person: `Carol` and `carol`, a fullwidth `ｃａｒｏｌ`, `José` precomposed or with a
//! combining accent. [`canonical`] folds those into one form, Unicode NFKC with full case
//! folding (the compatibility caseless match of the Unicode standard, D146, recomposed), so
//! that every comparison of people — the requester and an approver, two approvers, the owner
//! of an intent or an idempotency key — compares the canonical forms.
//!
//! Some spellings are refused instead of folded, because folding them silently would let one
//! person pass for another: invisible characters (U+200B and the other default-ignorable code
//! points, bidirectional controls, other controls and format characters), whitespace other
//! than an inner space, private-use and unassigned code points, and an empty name.
//!
//! Names that merely look alike (`саrol` with a Cyrillic `с` and `а`, `bob1` and `bobl`) have
//! different canonical forms. They share a UTS #39 confusable skeleton, and
//! [`Person::resembles`] treats them as one person where a mix-up would cost a safety check:
//! an approver who resembles the requester cannot approve, and two approvals by look-alikes
//! count once. Names an operator configures (approvers, the environment identity) pass
//! [`configured`] at start-up, which also refuses names that mix scripts the way such
//! imitations do, so a mistake shows before anyone waits on an approval.

use std::fmt;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;
use unicode_script::{Script, UnicodeScript};
use unicode_security::MixedScript;

/// One person: a tenant and a user, both in canonical form, with the confusable skeleton of
/// the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Person {
    tenant: String,
    user: String,
    skeleton: String,
}

impl Person {
    /// The person `user` of `tenant` names, or why that spelling is refused.
    pub fn new(tenant: &str, user: &str) -> Result<Self, NameError> {
        let tenant = canonical(tenant)?;
        let user = canonical(user)?;
        let skeleton = skeleton(&user);
        Ok(Self {
            tenant,
            user,
            skeleton,
        })
    }

    /// Like [`Person::new`], with the stricter rules for names an operator configures.
    pub fn configured(tenant: &str, user: &str) -> Result<Self, NameError> {
        configured(tenant)?;
        configured(user)?;
        Self::new(tenant, user)
    }

    /// The tenant, canonical.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The user, canonical: the spelling the audit log records.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The confusable skeleton of the user (UTS #39): look-alikes share it.
    #[cfg(feature = "approval")]
    pub(crate) fn skeleton(&self) -> &str {
        &self.skeleton
    }

    /// The same person: equal canonical tenant and user.
    pub fn is(&self, other: &Person) -> bool {
        self == other
    }

    /// The same person, or one whose name could be taken for theirs (same tenant, and the
    /// same confusable skeleton). For rules a look-alike must not get around.
    pub fn resembles(&self, other: &Person) -> bool {
        self.tenant == other.tenant && (self.user == other.user || self.skeleton == other.skeleton)
    }
}

impl fmt::Display for Person {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.user, self.tenant)
    }
}

/// Why a name is refused. Each message names the character or scripts and says what to do.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Nothing visible.
    #[error("a person's name is empty; give the tenant and user their identity provider knows")]
    Empty,
    /// An invisible or control character, which could make one person look like two.
    #[error(
        "the name {name:?} contains U+{code:04X}, an invisible or control character that would let one person pass for another; spell it without that character"
    )]
    Invisible {
        /// The name as given.
        name: String,
        /// The refused code point.
        code: u32,
    },
    /// Whitespace at either end, or other than a single inner space.
    #[error(
        "the name {name:?} has whitespace at its ends or whitespace other than single spaces inside; spell it as the identity provider does, without it"
    )]
    Whitespace {
        /// The name as given.
        name: String,
    },
    /// A private-use or unassigned code point, whose meaning may change.
    #[error(
        "the name {name:?} contains U+{code:04X}, a private-use or unassigned code point; spell it with assigned characters"
    )]
    Unassigned {
        /// The name as given.
        name: String,
        /// The refused code point.
        code: u32,
    },
    /// Letters of several scripts in one name, the way an imitation is spelled.
    #[error(
        "the name {name:?} mixes {scripts}, which is how a look-alike of another name is spelled; spell it in one script"
    )]
    MixedScripts {
        /// The name as given.
        name: String,
        /// The scripts found, for the message.
        scripts: String,
    },
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The canonical form of a name: NFKC with full case folding, or why it is refused.
///
/// The form is idempotent (`canonical(canonical(x)) == canonical(x)`), so a stored canonical
/// name compares with a fresh one.
pub fn canonical(name: &str) -> Result<String, NameError> {
    refuse_hidden(name)?;
    // Compatibility caseless matching (Unicode D146): NFKD(fold(NFKD(fold(NFD(x))))), here
    // recomposed with NFKC so the audit log shows ordinary text.
    let once: String = caseless::default_case_fold_str(&name.nfd().collect::<String>());
    let twice: String = caseless::default_case_fold_str(&once.nfkd().collect::<String>());
    let folded: String = twice.nfkc().collect();
    // Folding can map a visible character to whitespace (a fullwidth space) or to nothing.
    refuse_hidden(&folded).map_err(|_| NameError::Whitespace {
        name: name.to_owned(),
    })?;
    Ok(folded)
}

/// [`canonical`], also refusing a name whose letters come from scripts that do not belong
/// together (UTS #39 "highly restrictive": one script, or Latin with the Han-based
/// combinations of Japanese, Chinese or Korean). For names an operator writes down.
pub fn configured(name: &str) -> Result<String, NameError> {
    let folded = canonical(name)?;
    if !folded.as_str().is_single_script() && !latin_with_han_family(&folded) {
        return Err(NameError::MixedScripts {
            name: name.to_owned(),
            scripts: scripts(&folded),
        });
    }
    Ok(folded)
}

/// Whether `c` shows nothing on its own: Unicode White_Space, controls (Cc), format
/// characters (Cf: zero-width space, joiners, word joiner, byte order mark, bidirectional
/// controls, soft hyphen, tags), and the letters and symbols fonts draw blank (the Hangul
/// fillers and the blank Braille pattern).
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            get_general_category(c),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::SpaceSeparator
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
        || matches!(
            c,
            '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
        )
}

/// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a
/// renderer may draw as nothing, combining ones such as variation selectors included.
pub(crate) fn is_default_ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}'..='\u{1160}' | '\u{17B4}'..='\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

fn refuse_hidden(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    for c in name.chars() {
        if c == ' ' {
            continue;
        }
        if is_invisible(c) || is_default_ignorable(c) {
            return Err(NameError::Invisible {
                name: name.to_owned(),
                code: u32::from(c),
            });
        }
        if matches!(
            get_general_category(c),
            GeneralCategory::PrivateUse | GeneralCategory::Unassigned | GeneralCategory::Surrogate
        ) {
            return Err(NameError::Unassigned {
                name: name.to_owned(),
                code: u32::from(c),
            });
        }
    }
    if name.starts_with(' ') || name.ends_with(' ') || name.contains("  ") {
        return Err(NameError::Whitespace {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The UTS #39 skeleton: equal for names a reader could take for each other.
fn skeleton(canonical: &str) -> String {
    unicode_security::skeleton(canonical).collect()
}

/// Latin beside a Han-based writing system (Japanese, Chinese with Bopomofo, Korean), which
/// UTS #39 counts as highly restrictive rather than mixed.
fn latin_with_han_family(name: &str) -> bool {
    let others: String = name
        .chars()
        .filter(|c| c.script() != Script::Latin)
        .collect();
    let set = unicode_security::mixed_script::AugmentedScriptSet::for_str(&others);
    !set.is_empty() && (set.jpan || set.hanb || set.kore) && !set.is_all()
}

/// The scripts a name's letters come from, for a message.
fn scripts(name: &str) -> String {
    let mut found: Vec<&str> = Vec::new();
    for c in name.chars() {
        let script = c.script();
        if matches!(script, Script::Common | Script::Inherited | Script::Unknown) {
            continue;
        }
        let script = script.full_name();
        if !found.contains(&script) {
            found.push(script);
        }
    }
    match found.as_slice() {
        [] => "scripts".to_owned(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        canonical(a).unwrap() == canonical(b).unwrap()
    }

    #[test]
    fn a_name_error_prints_its_sentence_with_debug() {
        let error = NameError::Empty;
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(format!("{error:?}").contains("give the tenant and user"));
    }

    #[test]
    fn case_width_and_composition_fold_into_one_name() {
        assert!(same("Carol", "carol"));
        assert!(same("alice", "Alice"));
        assert!(same("ALICE", "alice"));
        assert!(same("\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}", "carol"));
        assert!(same("Jos\u{E9}", "jose\u{301}"));
        assert!(same("Stra\u{DF}e", "strasse"));
        assert!(same("\u{212B}ngstr\u{F6}m", "\u{E5}ngstro\u{308}m"));
        assert!(!same("carol", "caro"));
        assert_eq!(canonical("Carol").unwrap(), "carol");
        for name in ["Carol", "ｃａｒｏｌ", "José", "Straße", "ǅemal", "ﬁona"] {
            let once = canonical(name).unwrap();
            assert_eq!(canonical(&once).unwrap(), once, "{name} folds once");
        }
    }

    #[test]
    fn invisible_and_control_characters_are_refused_not_stripped() {
        for name in [
            "carol\u{200B}",
            "ca\u{200D}rol",
            "\u{FEFF}carol",
            "carol\u{202E}",
            "car\u{2066}ol",
            "car\u{AD}ol",
            "carol\u{FE0F}",
            "caro\u{34F}l",
            "carol\u{E0041}",
            "carol\u{7}",
            "carol\n",
            "\u{3164}carol",
        ] {
            assert!(
                matches!(canonical(name), Err(NameError::Invisible { .. })),
                "{name:?}: {:?}",
                canonical(name)
            );
        }
        for name in [" carol", "carol ", "car  ol", "carol\u{3000}"] {
            assert!(canonical(name).is_err(), "{name:?}");
        }
        assert_eq!(canonical(""), Err(NameError::Empty));
        assert!(matches!(
            canonical("carol\u{E000}"),
            Err(NameError::Unassigned { .. })
        ));
        assert_eq!(canonical("Mary Ann").unwrap(), "mary ann");
        let message = canonical("carol\u{200B}").unwrap_err().to_string();
        assert!(message.contains("U+200B"), "{message}");
    }

    #[test]
    fn look_alikes_resemble_each_other_and_configured_names_refuse_mixed_scripts() {
        let carol = Person::new("acme", "carol").unwrap();
        let cyrillic = Person::new("acme", "\u{441}\u{430}rol").unwrap();
        assert!(!carol.is(&cyrillic), "another canonical name");
        assert!(carol.resembles(&cyrillic), "but taken for carol");
        assert!(carol.resembles(&Person::new("ACME", "Carol").unwrap()));
        assert!(!carol.resembles(&Person::new("other", "carol").unwrap()));
        assert!(!carol.resembles(&Person::new("acme", "bob").unwrap()));

        let err = configured("\u{441}\u{430}rol").unwrap_err();
        assert!(matches!(err, NameError::MixedScripts { .. }), "{err}");
        assert!(err.to_string().contains("Cyrillic and Latin"), "{err}");
        for fine in [
            "carol",
            "alice@example.com",
            "auth0|5f3c",
            "\u{5C71}\u{7530}\u{592A}\u{90CE}",
            "\u{5C71}\u{7530} taro",
            "\u{434}\u{43C}\u{438}\u{442}\u{440}\u{438}\u{439}",
        ] {
            assert!(configured(fine).is_ok(), "{fine}: {:?}", configured(fine));
        }
        assert!(Person::configured("acme", "\u{441}\u{430}rol").is_err());
    }
}
