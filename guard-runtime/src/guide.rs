// guard's reference, one page per topic: Markdown files under `docs/`, shown as modules
// without items so that docs.rs carries them next to the API (the pattern of clap's
// `_derive::_tutorial` and axum's `docs/*.md`).
#![doc = include_str!("../docs/guide.md")]

pub mod destructive {
    #![doc = include_str!("../docs/destructive.md")]
}

pub mod ask {
    #![doc = include_str!("../docs/ask.md")]
}

pub mod disclosure {
    #![doc = include_str!("../docs/disclosure.md")]
}

pub mod grants {
    #![doc = include_str!("../docs/grants.md")]
}

pub mod call_flow {
    #![doc = include_str!("../docs/call_flow.md")]
}

pub mod forms {
    #![doc = include_str!("../docs/forms.md")]
}

pub mod compile_errors {
    #![doc = include_str!("../docs/compile_errors.md")]
}

pub mod annotations {
    #![doc = include_str!("../docs/annotations.md")]
}

pub mod two_phase {
    #![doc = include_str!("../docs/two_phase.md")]
}

pub mod undo {
    #![doc = include_str!("../docs/undo.md")]
}

pub mod defer {
    #![doc = include_str!("../docs/defer.md")]
}

pub mod idempotency {
    #![doc = include_str!("../docs/idempotency.md")]
}

pub mod batches {
    #![doc = include_str!("../docs/batches.md")]
}

pub mod approval_page {
    #![doc = include_str!("../docs/approval_page.md")]
}

pub mod exposure {
    #![doc = include_str!("../docs/exposure.md")]
}

pub mod identity {
    #![doc = include_str!("../docs/identity.md")]
}

pub mod sandbox {
    #![doc = include_str!("../docs/sandbox.md")]
}

pub mod audit_log {
    #![doc = include_str!("../docs/audit_log.md")]
}

pub mod protocol_eras {
    #![doc = include_str!("../docs/protocol_eras.md")]
}

pub mod installing {
    #![doc = include_str!("../docs/installing.md")]
}

pub mod threat_model {
    #![doc = include_str!("../docs/threat_model.md")]
}
