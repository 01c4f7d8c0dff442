// A secret is refused however the field is spelled: camelCase, concatenated, a raw
// identifier, and the secrets beyond passwords and tokens (keys, one-time codes, card and
// identity numbers, wallet phrases).

#![allow(non_snake_case)]

use rmcp_guard::Form;

#[derive(Form)]
struct Checkout {
    reason: String,
    accessToken: String,
    secretKey: String,
    privateKey: String,
    apikey: String,
    passcode: String,
    seed_phrase: String,
    mnemonic: String,
    totp: String,
    ssn: String,
    credit_card: String,
    r#password: String,
}

fn main() {}
