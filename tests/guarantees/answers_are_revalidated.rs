//! Server-side revalidation, property-tested: for arbitrary form answers (random JSON,
//! random objects, and mutations of valid answers) the runtime accepts exactly what an
//! independent oracle accepts, and end to end the effect happens only for answers that are
//! valid and confirm.

use crate::support::*;
use proptest::prelude::*;
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{Form, validate::validate};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use safe_ops::server::{ApprovalLevel, DeleteConfirmation, DeployConfig, DropTableConfirmation};
use serde_json::{Map, Number, Value, json};

// ── the oracle: the safe-ops forms, written out by hand ────────────────────────────────

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Delete,
    Drop,
    Deploy,
}

impl Kind {
    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::Delete => &["confirm", "reason"],
            Kind::Drop => &["typed_name", "approver"],
            Kind::Deploy => &["approval_level", "rollback_plan"],
        }
    }

    fn tool(self) -> (&'static str, Value) {
        match self {
            Kind::Delete => ("delete_file", json!({"path": "old.log"})),
            Kind::Drop => ("drop_table", json!({"table": "orders"})),
            Kind::Deploy => ("deploy", json!({"service": "billing"})),
        }
    }
}

/// The parsed answer, in a shape both sides can produce.
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    Delete {
        confirm: bool,
        reason: Option<String>,
    },
    Drop {
        typed_name: String,
        approver: String,
    },
    Deploy {
        urgent: bool,
        rollback_plan: String,
    },
}

/// Absent and `null` both mean "not given".
fn given<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|v| !v.is_null())
}

/// Characters that show nothing on their own, written out by hand (the oracle's own list,
/// not the runtime's Unicode tables): spaces, line breaks, format characters such as the
/// zero-width space, joiners, word joiner, byte order mark, soft hyphen, bidi override,
/// Mongolian vowel separator and tag space, and the fillers fonts draw blank.
const INVISIBLE: &[char] = &[
    ' ',
    '\t',
    '\n',
    '\r',
    '\u{A0}',
    '\u{2003}',
    '\u{3000}',
    '\u{2028}',
    '\u{2029}',
    '\u{85}',
    '\u{200B}',
    '\u{200C}',
    '\u{200D}',
    '\u{2060}',
    '\u{FEFF}',
    '\u{AD}',
    '\u{202E}',
    '\u{2066}',
    '\u{180E}',
    '\u{E0020}',
    '\u{3164}',
    '\u{115F}',
    '\u{FFA0}',
    '\u{2800}',
];

/// Combining marks: acute, diaeresis, emoji variation selector, enclosing circle, grapheme
/// joiner. They belong to the character before them and never count on their own.
const MARKS: &[char] = &['\u{301}', '\u{308}', '\u{FE0F}', '\u{20DD}', '\u{34F}'];

/// Invisible characters that can sit inside a typed name without being trimmed.
const HIDDEN_INSIDE: &[char] = &[
    '\u{200B}',
    '\u{200C}',
    '\u{200D}',
    '\u{2060}',
    '\u{FEFF}',
    '\u{AD}',
    '\u{202E}',
    '\u{180E}',
    '\u{E0020}',
    '\u{FE0F}',
    '\u{34F}',
];

/// What `min_length`/`max_length` count: characters that are neither invisible nor marks.
fn visible(text: &str) -> usize {
    text.chars()
        .filter(|c| !INVISIBLE.contains(c) && !MARKS.contains(c) && !c.is_whitespace())
        .count()
}

/// A text answer within `min..=max` visible characters; one that is not empty but shows
/// nothing is refused, and a required one needs something visible.
fn text_within(value: &Value, min: usize, max: usize, required: bool) -> Option<String> {
    let text = value.as_str()?;
    let n = visible(text);
    if n == 0 && (required || !text.is_empty()) {
        return None;
    }
    (min <= n && n <= max).then(|| text.to_owned())
}

/// What a correct server accepts as a well-formed answer for `kind`.
fn oracle(kind: Kind, content: &Value) -> Option<Parsed> {
    let object = content.as_object()?;
    if object.keys().any(|k| !kind.fields().contains(&k.as_str())) {
        return None;
    }
    match kind {
        Kind::Delete => {
            let confirm = match given(object, "confirm") {
                None => false,
                Some(v) => v.as_bool()?,
            };
            let reason = match given(object, "reason") {
                None => None,
                Some(v) => Some(text_within(v, 0, 500, false)?),
            };
            Some(Parsed::Delete { confirm, reason })
        }
        Kind::Drop => Some(Parsed::Drop {
            typed_name: text_within(given(object, "typed_name")?, 0, usize::MAX, true)?,
            approver: text_within(given(object, "approver")?, 1, 100, true)?,
        }),
        Kind::Deploy => {
            let urgent = match given(object, "approval_level") {
                None => false,
                Some(Value::String(s)) if s == "standard" => false,
                Some(Value::String(s)) if s == "urgent" => true,
                Some(_) => return None,
            };
            Some(Parsed::Deploy {
                urgent,
                rollback_plan: text_within(given(object, "rollback_plan")?, 1, 2000, true)?,
            })
        }
    }
}

/// Whether the tool's effect may run: well formed, and the confirmation or rule holds.
fn oracle_effect(kind: Kind, content: &Value) -> bool {
    match oracle(kind, content) {
        Some(Parsed::Delete { confirm, .. }) => confirm,
        Some(Parsed::Drop { typed_name, .. }) => typed_name.trim() == "orders",
        Some(Parsed::Deploy {
            urgent,
            rollback_plan,
        }) => !urgent || visible(&rollback_plan) >= 10,
        None => false,
    }
}

/// The runtime's verdict: `validate` then `from_valid`, as the flow runs them.
fn runtime(kind: Kind, content: &Value) -> Option<Parsed> {
    fn parse<F: Form>(content: &Value) -> Option<F> {
        let object = validate(F::SPEC, Some(content)).ok()?;
        match F::from_valid(object) {
            Ok(form) => Some(form),
            Err(reason) => panic!("validate accepted {content} but from_valid refused: {reason}"),
        }
    }
    match kind {
        Kind::Delete => parse::<DeleteConfirmation>(content).map(|f| Parsed::Delete {
            confirm: f.confirm,
            reason: f.reason,
        }),
        Kind::Drop => parse::<DropTableConfirmation>(content).map(|f| Parsed::Drop {
            typed_name: f.typed_name,
            approver: f.approver,
        }),
        Kind::Deploy => parse::<DeployConfig>(content).map(|f| Parsed::Deploy {
            urgent: f.approval_level == ApprovalLevel::Urgent,
            rollback_plan: f.rollback_plan,
        }),
    }
}

// ── generators ─────────────────────────────────────────────────────────────────────────

/// Lengths around every bound the forms declare.
const LENGTHS: &[usize] = &[
    0, 1, 2, 9, 10, 11, 99, 100, 101, 499, 500, 501, 1999, 2000, 2001,
];

fn long_text() -> BoxedStrategy<String> {
    prop_oneof![
        (
            prop::sample::select(LENGTHS),
            prop::sample::select(vec!['x', ' ', 'é', '😀', '\u{43e}', '\u{200B}']),
        )
            .prop_map(|(n, c)| std::iter::repeat_n(c, n).collect()),
        // n visible characters, each followed by an invisible one: 2n characters in all.
        (prop::sample::select(LENGTHS), invisible_char()).prop_map(|(n, pad)| std::iter::repeat_n(
            ['x', pad],
            n
        )
        .flatten()
        .collect()),
    ]
    .boxed()
}

fn invisible_char() -> BoxedStrategy<char> {
    prop::sample::select([INVISIBLE, MARKS].concat()).boxed()
}

/// One or more characters that show nothing: spaces, format characters, lone marks.
fn invisible_only() -> BoxedStrategy<String> {
    prop::collection::vec(invisible_char(), 1..24)
        .prop_map(String::from_iter)
        .boxed()
}

/// Visible letters mixed with invisible characters anywhere (possibly none of either).
fn padded() -> BoxedStrategy<String> {
    prop::collection::vec(
        prop_oneof![2 => prop::char::range('a', 'z'), 1 => invisible_char()],
        0..40,
    )
    .prop_map(String::from_iter)
    .boxed()
}

fn words() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 _\\-\t\n]{0,14}",
        2 => prop::sample::select(vec![
            "true", "false", "1", "0", "null", "", " ", "standard", "urgent", "Standard",
            "URGENT", "asap", "orders", " orders ", "\torders\n", "Orders", "\u{43e}rders",
            "orders\u{200b}", "customers", "ada", "redeploy v41", "0123456789",
            "\u{200b}orders", "or\u{2060}ders", "\u{3000}orders\u{2028}",
        ])
        .prop_map(str::to_owned),
        1 => long_text(),
        1 => invisible_only(),
        1 => padded(),
    ]
    .boxed()
}

fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        prop::sample::select(vec![0i64, 1, -1, 10, 500]).prop_map(Value::from),
    ]
    .boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        2 => any::<bool>().prop_map(Value::Bool),
        2 => number(),
        4 => words().prop_map(Value::String),
    ]
    .boxed()
}

fn key(kind: Kind) -> BoxedStrategy<String> {
    let mut names: Vec<String> = kind.fields().iter().map(|s| (*s).to_owned()).collect();
    names.extend(
        [
            "Confirm",
            "confirm ",
            "typedName",
            "extra",
            "_meta",
            "",
            "approval",
            "reason",
            "approver",
            "rollback_plan",
            "typed_name",
            "confirm",
        ]
        .map(str::to_owned),
    );
    prop_oneof![
        3 => prop::sample::select(names),
        1 => "[a-z_]{1,8}",
    ]
    .boxed()
}

fn any_json(kind: Kind) -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key(kind), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object whose keys are mostly the form's own, with values of any type.
fn random_object(kind: Kind) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<Option<Value>>> = kind
        .fields()
        .iter()
        .map(|_| prop::option::weighted(0.8, prop_oneof![4 => leaf(), 1 => any_json(kind)]).boxed())
        .collect();
    (
        fields,
        prop::collection::btree_map(key(kind), leaf(), 0..2),
        any::<bool>(),
    )
        .prop_map(move |(values, extra, with_extra)| {
            let mut object = Map::new();
            for (name, value) in kind.fields().iter().zip(values) {
                if let Some(value) = value {
                    object.insert((*name).to_owned(), value);
                }
            }
            if with_extra {
                object.extend(extra);
            }
            Value::Object(object)
        })
        .boxed()
}

fn valid_answer(kind: Kind) -> BoxedStrategy<Value> {
    match kind {
        Kind::Delete => (
            prop::sample::select(vec![Some(true), Some(true), Some(false), None]),
            prop::option::of(prop_oneof![words(), "[a-z ]{0,40}".boxed()]),
        )
            .prop_map(|(confirm, reason)| {
                let mut object = Map::new();
                if let Some(confirm) = confirm {
                    object.insert("confirm".into(), json!(confirm));
                }
                if let Some(reason) = reason.filter(|r| r.chars().count() <= 500) {
                    object.insert("reason".into(), json!(reason));
                }
                Value::Object(object)
            })
            .boxed(),
        Kind::Drop => (
            prop_oneof![
                3 => prop::sample::select(vec!["orders", " orders", "orders  ", "\torders\n"])
                    .prop_map(str::to_owned),
                1 => words(),
            ],
            prop_oneof![
                4 => "[a-zA-Z .]{1,30}".boxed(),
                1 => padded(),
            ],
        )
            .prop_map(
                |(typed_name, approver)| json!({"typed_name": typed_name, "approver": approver}),
            )
            .boxed(),
        Kind::Deploy => (
            prop::sample::select(vec![None, Some("standard"), Some("urgent")]),
            prop_oneof![
                "[a-z ]{1,20}".boxed(),
                padded(),
                prop::sample::select(vec![
                    "revert", "  revert  ", "0123456789", " 012345678 ",
                    "\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}",
                ])
                    .prop_map(str::to_owned)
                    .boxed(),
            ],
        )
            .prop_map(|(level, plan)| {
                let mut object = Map::new();
                if let Some(level) = level {
                    object.insert("approval_level".into(), json!(level));
                }
                object.insert("rollback_plan".into(), json!(plan));
                Value::Object(object)
            })
            .boxed(),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Remove(usize),
    Set(usize, Value),
    Extra(String, Value),
    /// The value, as a string: `true` becomes `"true"`, `5` becomes `"5"`.
    Stringify(usize),
    Overlong(usize, String),
    /// A string that is not one of the offered choices.
    OffEnum(usize, String),
}

fn mutation(kind: Kind) -> BoxedStrategy<Mutation> {
    let n = kind.fields().len();
    prop_oneof![
        (0..n).prop_map(Mutation::Remove),
        (0..n, leaf()).prop_map(|(i, v)| Mutation::Set(i, v)),
        (key(kind), leaf()).prop_map(|(k, v)| Mutation::Extra(k, v)),
        (0..n).prop_map(Mutation::Stringify),
        (
            0..n,
            prop::sample::select(vec![101usize, 501, 2001]),
            prop::sample::select(vec!["a", "😀"])
        )
            .prop_map(|(i, len, c)| Mutation::Overlong(i, c.repeat(len))),
        (
            0..n,
            prop::sample::select(vec!["Urgent", "STANDARD", "asap", "", " urgent"])
        )
            .prop_map(|(i, s)| Mutation::OffEnum(i, s.to_owned())),
    ]
    .boxed()
}

fn apply(kind: Kind, mut content: Value, mutations: Vec<Mutation>) -> Value {
    let Some(object) = content.as_object_mut() else {
        return content;
    };
    let name = |i: usize| kind.fields()[i].to_owned();
    for m in mutations {
        match m {
            Mutation::Remove(i) => {
                object.remove(&name(i));
            }
            Mutation::Set(i, v) => {
                object.insert(name(i), v);
            }
            Mutation::Extra(k, v) => {
                object.insert(k, v);
            }
            Mutation::Stringify(i) => {
                if let Some(v) = object.get(&name(i)).cloned() {
                    let s = match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    object.insert(name(i), Value::String(s));
                }
            }
            Mutation::Overlong(i, s) | Mutation::OffEnum(i, s) => {
                object.insert(name(i), Value::String(s));
            }
        }
    }
    content
}

fn content(kind: Kind) -> BoxedStrategy<Value> {
    prop_oneof![
        1 => any_json(kind),
        3 => random_object(kind),
        2 => valid_answer(kind),
        4 => (valid_answer(kind), prop::collection::vec(mutation(kind), 1..4))
            .prop_map(move |(base, ms)| apply(kind, base, ms)),
    ]
    .boxed()
}

fn kind() -> impl Strategy<Value = Kind> {
    prop::sample::select(vec![Kind::Delete, Kind::Drop, Kind::Deploy])
}

/// The generators reach both sides of every verdict, so the properties below are not
/// vacuously true.
#[test]
fn generators_cover_both_verdicts() {
    use proptest::{strategy::ValueTree, test_runner::TestRunner};
    let mut runner = TestRunner::deterministic();
    for kind in [Kind::Delete, Kind::Drop, Kind::Deploy] {
        let strategy = content(kind);
        let (mut invalid, mut valid_no_effect, mut effect) = (0, 0, 0);
        for _ in 0..400 {
            let value = strategy
                .new_tree(&mut runner)
                .expect("value tree")
                .current();
            match (oracle(kind, &value).is_some(), oracle_effect(kind, &value)) {
                (false, _) => invalid += 1,
                (true, false) => valid_no_effect += 1,
                (true, true) => effect += 1,
            }
        }
        assert!(
            invalid >= 40 && valid_no_effect >= 10 && effect >= 40,
            "{kind:?}: {invalid} invalid, {valid_no_effect} valid without effect, {effect} with effect"
        );
    }
}

// ── the properties ─────────────────────────────────────────────────────────────────────

fn runtime_agrees(kind: Kind, content: &Value) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        runtime(kind, content),
        oracle(kind, content),
        "{:?} answer {}",
        kind,
        content
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn delete_confirmation_revalidates(content in content(Kind::Delete)) {
        runtime_agrees(Kind::Delete, &content)?;
    }

    #[test]
    fn drop_table_confirmation_revalidates(content in content(Kind::Drop)) {
        runtime_agrees(Kind::Drop, &content)?;
    }

    #[test]
    fn deploy_config_revalidates(content in content(Kind::Deploy)) {
        runtime_agrees(Kind::Deploy, &content)?;
    }
}

/// What one accepted answer did to the world: whether the tool's effect happened.
async fn effect_of(
    kind: Kind,
    era: rmcp::model::ProtocolVersion,
    content: Value,
) -> (bool, rmcp::model::CallToolResult, usize) {
    let world = World::new();
    let human = ScriptedHuman::new(era);
    human.will(Answer::Accept(content));
    let client = connect(world.server(), human.clone()).await;
    let (tool, args) = kind.tool();
    let result = call(&client, tool, args).await;
    let _ = client.cancel().await;
    let happened = match kind {
        Kind::Delete => world.file("old.log").is_none(),
        Kind::Drop => world.rows("orders").is_none(),
        Kind::Deploy => !world.deployments().is_empty(),
    };
    // Nothing else may change, whatever the answer.
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
    assert_eq!(world.rows("customers"), Some(3));
    (happened, result, human.shown().len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn effect_only_for_valid_confirming_answers(
        (kind, mrtr, content) in (kind(), any::<bool>())
            .prop_flat_map(|(kind, mrtr)| (Just(kind), Just(mrtr), content(kind))),
    ) {
        let era = if mrtr { MRTR } else { PUSH };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (happened, result, asked) = rt.block_on(effect_of(kind, era, content.clone()));
        let expected = oracle_effect(kind, &content);
        prop_assert_eq!(asked, 1, "asked exactly once");
        prop_assert_eq!(happened, expected, "{:?} answer {} → {}", kind, content, text(&result));
        if expected {
            prop_assert_eq!(outcome(&result), Some(Outcome::Executed));
        } else {
            prop_assert!(is_error(&result), "refusal is an error: {}", text(&result));
            prop_assert_eq!(code(&result), Some("INVALID_CONFIRMATION".to_owned()));
        }
    }
}

// ── visible text only ──────────────────────────────────────────────────────────────────

/// Every required text field of the safe-ops forms, with the rest of a valid answer.
fn with_required_text(field: usize, text: &str) -> (&'static rmcp_guard::form::FormSpec, Value) {
    match field {
        0 => (
            DropTableConfirmation::SPEC,
            json!({"typed_name": text, "approver": "ada"}),
        ),
        1 => (
            DropTableConfirmation::SPEC,
            json!({"typed_name": "orders", "approver": text}),
        ),
        _ => (
            DeployConfig::SPEC,
            json!({"approval_level": "urgent", "rollback_plan": text}),
        ),
    }
}

/// `n` visible letters with `pads` spread between, before and after them.
fn interleave(n: usize, pads: &[char]) -> String {
    let mut text = String::new();
    for i in 0..n.max(pads.len()) {
        if let Some(pad) = pads.get(i) {
            text.push(*pad);
        }
        if i < n {
            text.push('a');
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn invisible_only_text_is_always_refused(text in invisible_only(), field in 0..3usize) {
        let (spec, content) = with_required_text(field, &text);
        let problems = validate(spec, Some(&content)).expect_err("refused");
        prop_assert!(
            problems.iter().any(|p| p.contains("no visible characters")),
            "{:?}: {:?}", text, problems
        );
        // An optional field given only invisible characters is refused too.
        let reason = json!({"confirm": true, "reason": text});
        prop_assert!(validate(DeleteConfirmation::SPEC, Some(&reason)).is_err());
    }

    #[test]
    fn only_visible_characters_count_toward_lengths(
        n in 0usize..130,
        pads in prop::collection::vec(invisible_char(), 0..400),
    ) {
        let approver = interleave(n, &pads);
        let content = json!({"typed_name": "orders", "approver": approver});
        let accepted = validate(DropTableConfirmation::SPEC, Some(&content)).is_ok();
        prop_assert_eq!(accepted, (1..=100).contains(&n), "{} visible in {:?}", n, approver);
        let plan = interleave(n * 20, &pads);
        let content = json!({"rollback_plan": plan});
        let accepted = validate(DeployConfig::SPEC, Some(&content)).is_ok();
        prop_assert_eq!(accepted, (1..=2000).contains(&(n * 20)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn typed_name_with_an_invisible_character_inside_never_matches(
        at in 0usize..=6,
        hidden in prop::sample::select(HIDDEN_INSIDE),
        padding in "[ \t]{0,2}",
        mrtr in any::<bool>(),
    ) {
        let mut name: Vec<char> = "orders".chars().collect();
        name.insert(at, hidden);
        let typed = format!("{padding}{}{padding}", String::from_iter(name));
        let era = if mrtr { MRTR } else { PUSH };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let content = json!({"typed_name": typed, "approver": "ada"});
        let (happened, result, _) = rt.block_on(effect_of(Kind::Drop, era, content));
        prop_assert!(!happened, "{:?} dropped the table", typed);
        prop_assert_eq!(code(&result), Some("INVALID_CONFIRMATION".to_owned()));
        prop_assert!(
            text(&result).contains("invisible characters"),
            "{:?}: {}", typed, text(&result)
        );
    }
}

#[tokio::test]
async fn urgent_deploy_with_an_invisible_rollback_plan_records_nothing() {
    for plan in [
        "\u{200B}".repeat(10),
        " ".repeat(12),
        "\u{3164}\u{2060}".repeat(6),
    ] {
        let content = json!({"approval_level": "urgent", "rollback_plan": plan});
        let (happened, result, _) = effect_of(Kind::Deploy, PUSH, content).await;
        assert!(!happened, "{plan:?} deployed");
        assert_eq!(code(&result).as_deref(), Some("INVALID_CONFIRMATION"));
        assert!(
            text(&result).contains("no visible characters"),
            "{}",
            text(&result)
        );
    }
}

#[tokio::test]
async fn approver_of_only_spaces_drops_nothing() {
    let content = json!({"typed_name": "orders", "approver": "   "});
    let (happened, result, _) = effect_of(Kind::Drop, PUSH, content).await;
    assert!(!happened);
    assert!(
        text(&result).contains("`approver` has no visible characters"),
        "{}",
        text(&result)
    );
}
