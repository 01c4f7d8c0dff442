//! An `#[ask]` tool collects input without a destructive effect: its handler runs only with
//! an `Answered<F>` that guard built after a real accept and a server-side revalidation of the
//! answer against the form. Decline, cancel and a client that cannot elicit end the call with
//! a natural result, and an invalid answer with an error; in none of them does the handler run.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Answered, Exposure, Form, FormEnum, Guard, Guarded, ToolArgs, ToolError, ask, exposed,
    outcome::Outcome,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

use crate::support::{call, code, connect, is_error, outcome, text};

#[derive(Debug, FormEnum)]
enum Topping {
    Cheese,
    #[form(title = "Fresh basil")]
    Basil,
}

#[derive(Debug, Form)]
struct Order {
    /// Who the pizza is for.
    #[form(min_length = 1)]
    name: String,
    /// What goes on it.
    toppings: Vec<Topping>,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct OrderArgs {
    /// The occasion, shown in the question.
    occasion: String,
}

#[derive(Clone)]
struct Pizzeria {
    guard: Arc<Guard>,
    handled: Arc<AtomicUsize>,
}

impl Guarded for Pizzeria {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router]
impl Pizzeria {
    /// Ask the user what pizza to order.
    #[ask(question = Self::question, message = "Your order", validate = Self::kitchen_rules)]
    #[tool]
    async fn order_pizza(
        &self,
        Parameters(args): Parameters<OrderArgs>,
        answered: Answered<Order>,
    ) -> Result<String, ToolError> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        let toppings: Vec<&str> = answered
            .toppings
            .iter()
            .map(|t| FormEnum::as_wire(t))
            .collect();
        Ok(format!(
            "{} gets {} for the {}",
            answered.name,
            toppings.join("+"),
            args.occasion
        ))
    }

    /// The kitchen bakes for a named person only.
    fn kitchen_rules(order: &Order) -> Result<(), String> {
        match order.name.as_str() {
            "Nobody" => Err("the kitchen bakes for a named person".to_owned()),
            _ => Ok(()),
        }
    }

    fn question(&self, args: &OrderArgs) -> String {
        format!("What pizza for the {}?", args.occasion)
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Pizzeria {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn pizzeria() -> Pizzeria {
    let guard = Guard::ephemeral()
        .unwrap()
        .with_exposure(Exposure::all_tools());
    Pizzeria {
        guard: Arc::new(guard),
        handled: Arc::default(),
    }
}

/// Calls `order_pizza` once with `human`; returns the result text, its outcome, whether it
/// is an error with its code, and how many times the handler ran.
async fn order(human: ScriptedHuman) -> (String, Option<Outcome>, bool, Option<String>, usize) {
    let server = pizzeria();
    let handled = server.handled.clone();
    let client = connect(server, human).await;
    let result = call(&client, "order_pizza", json!({"occasion": "party"})).await;
    let _ = client.cancel().await;
    (
        text(&result),
        outcome(&result),
        is_error(&result),
        code(&result),
        handled.load(Ordering::SeqCst),
    )
}

async fn an_accepted_answer_reaches_the_handler(era: ProtocolVersion) {
    let human = ScriptedHuman::new(era);
    human.will(Answer::Accept(
        json!({"name": "Ada", "toppings": ["basil", "cheese"]}),
    ));
    let (text, outcome, error, _, handled) = order(human.clone()).await;
    assert_eq!(text, "Ada gets basil+cheese for the party");
    assert_eq!(
        (outcome, error, handled),
        (Some(Outcome::Executed), false, 1)
    );
    let shown = human.shown();
    assert_eq!(shown.len(), 1, "asked exactly once");
    assert_eq!(shown[0].message, "Your order\n\nWhat pizza for the party?");
    assert_eq!(
        shown[0].schema["properties"]["toppings"],
        json!({
            "type": "array",
            "description": "What goes on it.",
            "items": {"anyOf": [
                {"const": "cheese", "title": "cheese"},
                {"const": "basil", "title": "Fresh basil"},
            ]},
        })
    );
    assert_eq!(shown[0].schema["required"], json!(["name", "toppings"]));
}

async fn decline_and_cancel_are_natural_results(era: ProtocolVersion) {
    for (answer, expected) in [
        (Answer::Decline, Outcome::Declined),
        (Answer::Cancel, Outcome::Cancelled),
    ] {
        let human = ScriptedHuman::new(era.clone());
        human.will(answer);
        let (text, outcome, error, _, handled) = order(human).await;
        assert_eq!(
            (outcome, error, handled),
            (Some(expected), false, 0),
            "{text}"
        );
        assert!(text.contains("order_pizza did not run"), "{text}");
        if expected == Outcome::Cancelled {
            assert_eq!(
                text,
                "The question was cancelled; nothing was changed (order_pizza did not run)."
            );
        }
    }
}

async fn an_invalid_answer_never_reaches_the_handler(era: ProtocolVersion) {
    for content in [
        json!({"name": "Ada", "toppings": ["pineapple"]}),
        json!({"name": "Ada", "toppings": ["cheese", "cheese"]}),
        // Other spellings of an offered value are not that value.
        json!({"name": "Ada", "toppings": ["Cheese"]}),
        json!({"name": "Ada", "toppings": ["che\u{200b}ese"]}),
        json!({"name": "Ada", "toppings": [" basil"]}),
        json!({"name": "Ada", "toppings": "cheese"}),
        json!({"name": "\u{200b}", "toppings": []}),
        json!({"toppings": []}),
        json!({"name": "Ada", "toppings": [], "tip": 5}),
        Value::Null,
        // Fits the form, fails the tool's `validate` rule.
        json!({"name": "Nobody", "toppings": []}),
    ] {
        let human = ScriptedHuman::new(era.clone());
        human.will(Answer::Accept(content.clone()));
        let (text, _, error, code, handled) = order(human).await;
        assert!(error, "{content}: {text}");
        // Nothing was being confirmed: the answer to a question is invalid.
        assert_eq!(code.as_deref(), Some("INVALID_ANSWER"), "{content}: {text}");
        assert_eq!(
            handled, 0,
            "{content}: the handler ran on an invalid answer"
        );
    }
}

async fn a_client_that_cannot_elicit_is_never_asked(era: ProtocolVersion) {
    let human = ScriptedHuman::without_elicitation(era);
    let (text, outcome, error, _, handled) = order(human.clone()).await;
    assert_eq!(
        (outcome, error, handled),
        (Some(Outcome::UnsupportedClient), false, 0),
        "{text}"
    );
    assert!(human.shown().is_empty());
}

async fn malformed_arguments_are_refused_before_anyone_is_asked(era: ProtocolVersion) {
    for args in [
        json!({}),
        json!({"occasion": 5}),
        json!({"occasion": ["party"]}),
    ] {
        let human = ScriptedHuman::new(era.clone());
        human.will(Answer::Accept(json!({"name": "Ada", "toppings": []})));
        let server = pizzeria();
        let handled = server.handled.clone();
        let client = connect(server, human.clone()).await;
        let result = call(&client, "order_pizza", args.clone()).await;
        let _ = client.cancel().await;
        assert!(is_error(&result), "{args}: {}", text(&result));
        assert_eq!(code(&result).as_deref(), Some("INVALID_INPUT"), "{args}");
        assert_eq!(outcome(&result), Some(Outcome::InvalidArguments), "{args}");
        assert!(human.shown().is_empty(), "{args}: the human was asked");
        assert_eq!(handled.load(Ordering::SeqCst), 0, "{args}: the handler ran");
    }
}

#[test]
fn an_ask_tool_is_published_as_neither_read_only_nor_destructive() {
    let tools = Pizzeria::tool_router().list_all();
    let hints = tools[0].annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(false));
    assert_eq!(hints.destructive_hint, Some(false));
}

both_eras!(
    an_accepted_answer_reaches_the_handler,
    decline_and_cancel_are_natural_results,
    an_invalid_answer_never_reaches_the_handler,
    a_client_that_cannot_elicit_is_never_asked,
    malformed_arguments_are_refused_before_anyone_is_asked,
);
