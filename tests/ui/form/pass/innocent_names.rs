// Names that contain the letters of a secret word but say nothing secret compile: guard
// reads a name by its words, so `path` is not `pat` and `compat` is not `pat` either.

use rmcp_guard::Form;

#[derive(Form)]
#[allow(dead_code)]
struct Export {
    path: String,
    pattern: String,
    patch: String,
    compat: bool,
    spatial: bool,
    output: String,
    dispatch: bool,
    zip_code: String,
    promo_code: Option<String>,
    error_code: Option<i64>,
    public_key_fingerprint: Option<String>,
    primary_key: Option<String>,
    phone_number: Option<String>,
    sms_opt_in: bool,
    two_factor_enabled: bool,
    session_timeout: u32,
    license_type: Option<String>,
    card_holder: Option<String>,
    cookie_banner: bool,
    #[form(title = "The file pattern to match", description = "A glob matched against each path")]
    glob: String,
}

fn main() {}
