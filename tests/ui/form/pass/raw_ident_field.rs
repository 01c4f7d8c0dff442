// A raw identifier's wire name has no `r#`: the form asks for `type` and reads `type` back.

use rmcp_guard::Form;

#[derive(Debug, Form)]
struct Pick {
    r#type: String,
    r#loop: bool,
}

fn main() {
    let names: Vec<&str> = <Pick as Form>::SPEC.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, ["type", "loop"]);
    let content = serde_json::json!({"type": "logs", "loop": true});
    // The server's revalidation accepts `type` and refuses `r#type` as an unknown field.
    let valid = rmcp_guard::validate::validate(<Pick as Form>::SPEC, Some(&content)).unwrap();
    let raw = serde_json::json!({"r#type": "logs", "loop": true});
    assert!(rmcp_guard::validate::validate(<Pick as Form>::SPEC, Some(&raw)).is_err());
    let pick = Pick::from_valid(valid).unwrap();
    assert_eq!(pick.r#type, "logs");
    assert!(pick.r#loop);
    let back = pick.to_content();
    assert_eq!(back.get("type"), Some(&serde_json::json!("logs")));
    assert_eq!(back.get("loop"), Some(&serde_json::json!(true)));
}
