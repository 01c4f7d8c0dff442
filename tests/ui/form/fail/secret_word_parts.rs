// Secrets named by their parts are refused in every spelling: a web token, a session
// cookie, a code sent to prove who the human is, a key file, a card number, and the short
// forms of password and personal access token. A title that asks for one is refused too.

#![allow(non_snake_case)]

use rmcp_guard::Form;

#[derive(Form)]
struct SignIn {
    jwt: String,
    sessionCookie: String,
    oauth_code: String,
    sms_code: String,
    twoFactorCode: String,
    login_code: String,
    PRIV_KEY: String,
    gpg_key: String,
    license_key: String,
    cc_number: String,
    pw: String,
    pat: String,
    #[form(title = "The code from your authenticator app", description = "Your two-factor code")]
    digits: String,
}

fn main() {}
