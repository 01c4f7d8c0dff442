// A look-alike letter (Cyrillic `а` in `pаssword`) would hide a secret from the check, so
// form field names must be ASCII.

#![allow(mixed_script_confusables, uncommon_codepoints)]

use rmcp_guard::Form;

#[derive(Form)]
struct Login {
    reason: String,
    pаssword: String,
}

fn main() {}
