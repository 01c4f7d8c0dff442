//! `#[operations]` on an impl block: pairs each `#[prepare(op = ...)]` tool with the
//! `#[confirm(op = ...)]` tool of the same op, checks both handlers' shapes, expands them into
//! guard's two-phase flow, and adds the read-only `get_operation_result` tool.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, FnArg, ImplItem, ImplItemFn, ItemImpl, LitStr, Pat, Type, spanned::Spanned};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    krate, options, stand_in,
    tool_attr::{self, is_attr},
    ty::{is_mut_ref, is_named, type_arg, typed_args},
};

mod generate;

const RESULT_TOOL: &str = "get_operation_result";

struct PrepareOpts {
    op: Option<LitStr>,
    ttl_secs: Option<u64>,
    scopes: Vec<String>,
    rate: Option<(u32, u64)>,
    /// `unknown_arguments = "ignore"`: names the prepare does not take are dropped.
    ignore_unknown: bool,
}

struct ConfirmOpts {
    op: Option<LitStr>,
    recheck: Option<Expr>,
    /// `defer = "2m"`: the confirmed effect waits this long (seconds).
    defer: Option<u64>,
}

/// One `#[prepare]` method, checked.
struct PrepareFn {
    f: ImplItemFn,
    opts: PrepareOpts,
    /// `P` of the `Intent<P>` it returns.
    payload: Option<Type>,
}

/// One `#[confirm]` method, checked.
struct ConfirmFn {
    f: ImplItemFn,
    opts: ConfirmOpts,
    /// `P` of the `Approved<P>` it takes.
    payload: Option<Type>,
}

pub fn expand(attr: TokenStream, mut item: ItemImpl) -> TokenStream {
    let cx = Ctxt::new();
    // The only impl-wide option; the rest go on each `#[prepare(...)]` and `#[confirm(...)]`.
    let krate = options::parse(&cx, attr, &options::OPERATIONS)
        .into_iter()
        .flatten()
        .find_map(|opt| attr::crate_path(&cx, &opt));
    let rt = krate::path(krate.as_ref());
    let (prepares, confirms, kept) = split(&cx, std::mem::take(&mut item.items), &rt);
    pair(&cx, &prepares, &confirms);
    check_names(&cx, &prepares, &confirms, &kept);
    if prepares.is_empty() && confirms.is_empty() {
        cx.error_spanned_by(&item.self_ty, "`#[operations]` found no `#[prepare]` or `#[confirm]` tool in this impl; remove it, or mark the two-phase tools");
    }
    item.items = kept;
    match cx.check() {
        Ok(()) => {
            item.items
                .extend(generate::generate(&prepares, &confirms, &rt));
            // One `get_operation_result` answers for a server's two-phase tools, so they all
            // go in one `#[operations]` impl; a second one is refused by this impl's name.
            let (impl_generics, _, where_clause) = item.generics.split_for_impl();
            let self_ty = &item.self_ty;
            quote! {
                #item
                impl #impl_generics #rt::__private::EveryTwoPhaseToolOfAServerGoesInOneOperationsImpl for #self_ty #where_clause {}
            }
        }
        Err(errors) => {
            let tools = prepares.into_iter().map(|p| p.f);
            for f in tools.chain(confirms.into_iter().map(|c| c.f)) {
                item.items.extend(stand_in::fallback(f));
            }
            quote!(#errors #item)
        }
    }
}

/// The impl's methods parsed and checked: the prepares, the confirms, and every other item
/// as written.
fn split(
    cx: &Ctxt,
    items: Vec<ImplItem>,
    rt: &TokenStream,
) -> (Vec<PrepareFn>, Vec<ConfirmFn>, Vec<ImplItem>) {
    let mut prepares = Vec::new();
    let mut confirms = Vec::new();
    let mut kept = Vec::new();
    for impl_item in items {
        let ImplItem::Fn(mut f) = impl_item else {
            kept.push(impl_item);
            continue;
        };
        if let Some(at) = f.attrs.iter().position(|a| is_attr(a, "prepare")) {
            let a = f.attrs.remove(at);
            let opts = prepare_opts(cx, &a);
            let payload = check_prepare(cx, &f, rt);
            set_hints(cx, &mut f, "prepare", tool_attr::prepare_hints());
            prepares.push(PrepareFn { f, opts, payload });
        } else if let Some(at) = f.attrs.iter().position(|a| is_attr(a, "confirm")) {
            let a = f.attrs.remove(at);
            let opts = confirm_opts(cx, &a);
            let payload = check_confirm(cx, &f);
            set_hints(cx, &mut f, "confirm", tool_attr::confirm_hints());
            confirms.push(ConfirmFn { f, opts, payload });
        } else {
            if f.sig.ident == RESULT_TOOL {
                cx.error_spanned_by(&f.sig.ident, format!("`{RESULT_TOOL}` is the tool `#[operations]` adds for two-phase operations; rename this method"));
            }
            if f.sig.ident == "tool_router" {
                cx.error_spanned_by(&f.sig.ident, "`#[operations]` must sit above `#[tool_router]`, so rmcp's router sees the tools it generates");
            }
            kept.push(ImplItem::Fn(f));
        }
    }
    (prepares, confirms, kept)
}

/// One route per name: rmcp's router keeps the route added last, so a plain `#[tool]`
/// named like a guarded tool of this impl (or a second guarded tool of that name) would
/// replace it without a word, and the tool would run unguarded. Reported at the plain tool.
fn check_names(cx: &Ctxt, prepares: &[PrepareFn], confirms: &[ConfirmFn], kept: &[ImplItem]) {
    struct Routed<'f> {
        name: String,
        at: proc_macro2::Span,
        method: &'f syn::Ident,
        guarded: bool,
    }
    fn routed(f: &ImplItemFn, guarded: bool) -> Routed<'_> {
        let (name, at) = tool_attr::route(f);
        Routed {
            name,
            at,
            method: &f.sig.ident,
            guarded,
        }
    }
    let mut tools: Vec<Routed> = prepares.iter().map(|p| routed(&p.f, true)).collect();
    tools.extend(confirms.iter().map(|c| routed(&c.f, true)));
    for item in kept {
        let ImplItem::Fn(f) = item else { continue };
        // `get_operation_result` as a method's name is reported by `split`.
        if !tool_attr::has_tool(f) || f.sig.ident == RESULT_TOOL {
            continue;
        }
        // A keyed `#[idempotent(key = ..)]` runs in guard's flow; a bare one is a claim.
        let keyed = tool_attr::find(f, &["idempotent"])
            .is_some_and(|a| matches!(a.meta, syn::Meta::List(_)));
        let guarded = keyed || tool_attr::find(f, &["destructive"]).is_some();
        let (name, at) = tool_attr::route(f);
        if !guarded && name == RESULT_TOOL {
            cx.push(syn::Error::new(
                at,
                format!("`{RESULT_TOOL}` is the tool `#[operations]` adds for two-phase operations; a tool of that name would replace it. Rename this tool"),
            ));
            continue;
        }
        tools.push(routed(f, guarded));
    }
    for (i, tool) in tools.iter().enumerate() {
        let others = tools
            .iter()
            .enumerate()
            .filter(|(j, t)| *j != i && t.name == tool.name);
        // At a plain tool, against the guarded one; between two guarded tools, at the later.
        let guarded = others
            .filter(|(j, t)| t.guarded && (!tool.guarded || *j < i))
            .map(|(_, t)| t);
        if let Some(other) = guarded.into_iter().next() {
            cx.push(syn::Error::new(
                tool.at,
                format!(
                    "`{}` is also the name of the guarded tool `{}` in this impl; rmcp's router keeps one route per name, so one would replace the other and the tool could run unguarded. Rename one of them",
                    tool.name, other.method
                ),
            ));
        }
    }
}

/// Reports an author-set hint or a malformed `#[tool]`; a missing `#[tool]` is reported by
/// [`check_common`].
fn set_hints(cx: &Ctxt, f: &mut ImplItemFn, what: &str, hints: TokenStream) {
    if tool_attr::has_tool(f) {
        tool_attr::set_hints(cx, f, what, hints);
    }
}

/// The attribute's options and the keys it names; `None` if the list did not parse (that
/// error is reported, and "missing option" errors on top of it would only be noise).
fn written_options(
    cx: &Ctxt,
    a: &syn::Attribute,
    declared: &options::Attribute,
) -> Option<(Vec<Opt>, Vec<String>)> {
    let tokens = match &a.meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    };
    let opts = options::parse(cx, tokens, declared)?;
    let keys = opts.iter().map(|opt| opt.key.to_string()).collect();
    Some((opts, keys))
}

fn op_name(cx: &Ctxt, opt: &Opt) -> Option<LitStr> {
    let Some(Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(s),
        ..
    })) = &opt.value
    else {
        attr::string_value(cx, opt);
        return None;
    };
    let v = s.value();
    let ok = v.starts_with(|c: char| c.is_ascii_lowercase())
        && v.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok {
        cx.error_spanned_by(s, format!("op `{v}` must be a snake_case name such as \"order_cancel\": it names the operation in the store and the audit log"));
        return None;
    }
    Some(s.clone())
}

fn prepare_opts(cx: &Ctxt, a: &syn::Attribute) -> PrepareOpts {
    let mut o = PrepareOpts {
        op: None,
        ttl_secs: None,
        scopes: Vec::new(),
        rate: None,
        ignore_unknown: false,
    };
    let Some((opts, given)) = written_options(cx, a, &options::PREPARE) else {
        return o;
    };
    // A key given with a bad value is reported there, not also as missing.
    let missing = |key: &str| !given.iter().any(|k| k == key);
    for opt in opts {
        match opt.key.to_string().as_str() {
            "op" => o.op = op_name(cx, &opt),
            "ttl" => o.ttl_secs = attr::duration_value(cx, &opt, &attr::TTL),
            "scope" => {
                if let Some(s) = attr::string_value(cx, &opt) {
                    o.scopes = s
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    if o.scopes.is_empty() {
                        cx.error_spanned_by(&opt.value, "`scope` is empty; name the scope the caller needs, e.g. `scope = \"orders.cancel\"`, or leave the option out");
                    }
                }
            }
            "rate" => o.rate = attr::rate_value(cx, &opt),
            "unknown_arguments" => o.ignore_unknown = attr::ignores_unknown(cx, &opt),
            _ => {}
        }
    }
    if missing("op") {
        cx.error_spanned_by(
            a,
            "`#[prepare]` needs `op = \"...\"`: the operation name its `#[confirm]` names too",
        );
    }
    if missing("ttl") {
        cx.error_spanned_by(a, "`#[prepare]` needs `ttl = \"10m\"`: how long the user has to confirm before the intent expires");
    }
    o
}

fn confirm_opts(cx: &Ctxt, a: &syn::Attribute) -> ConfirmOpts {
    let mut o = ConfirmOpts {
        op: None,
        recheck: None,
        defer: None,
    };
    let Some((opts, given)) = written_options(cx, a, &options::CONFIRM) else {
        return o;
    };
    let missing = |key: &str| !given.iter().any(|k| k == key);
    for opt in opts {
        match opt.key.to_string().as_str() {
            "op" => o.op = op_name(cx, &opt),
            "recheck" => o.recheck = attr::expr_value(cx, &opt, "Self::recheck_fn").cloned(),
            "defer" => o.defer = attr::duration_value(cx, &opt, &attr::CONFIRM_DEFER),
            _ => {}
        }
    }
    if missing("op") {
        cx.error_spanned_by(
            a,
            "`#[confirm]` needs `op = \"...\"`: the operation its `#[prepare]` froze",
        );
    }
    if missing("recheck") && !missing("defer") {
        cx.error_spanned_by(a, "`#[confirm]` with `defer` needs `recheck = Self::fn`: the effect runs when the call comes due, and the target may have changed by then (the order shipped), so guard re-checks it inside the run's transaction before the effect. Write `async fn(&self, &mut Locked<Payload>) -> Result<Recheck, ToolError>` and name it in `recheck`");
    } else if missing("recheck") {
        cx.error_spanned_by(a, "`#[confirm]` needs `recheck = Self::fn`: the target may have changed since the prepare (the order shipped), so guard re-checks it inside the confirm's transaction before the effect. Write `async fn(&self, &mut Locked<Payload>) -> Result<Recheck, ToolError>`");
    }
    o
}

/// Checks shared by both kinds: `async`, `&self`, a `#[tool]` below.
fn check_common(cx: &Ctxt, f: &ImplItemFn, what: &str) {
    if f.sig.asyncness.is_none() {
        cx.error_spanned_by(
            f.sig.fn_token,
            format!("a `#[{what}]` handler must be `async fn`: guard awaits it inside the store transaction {}. Write `async fn`", transaction_of(what)),
        );
    }
    if !matches!(f.sig.inputs.first(), Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none())
    {
        cx.error_spanned_by(
            &f.sig.ident,
            format!("a `#[{what}]` tool is a method taking `&self`"),
        );
    }
    if !tool_attr::has_tool(f) {
        cx.error_spanned_by(&f.sig.ident, format!("`#[{what}]` must sit directly above rmcp's `#[tool]` on a tool method; guard writes the tool's annotations into that `#[tool]`"));
    }
    for other in ["destructive", "read_only", "idempotent"] {
        if let Some(a) = tool_attr::find(f, &[other]) {
            cx.error_spanned_by(a, format!("a `#[{what}]` tool cannot also be `#[{other}]`: guard sets its annotations from the two-phase flow"));
        }
    }
}

/// What the store transaction a handler runs in is for.
fn transaction_of(what: &str) -> &'static str {
    if what == "prepare" {
        "the intent is stored in"
    } else {
        "the effect commits in"
    }
}

/// A prepare takes `&mut Prepare` and its `Parameters<Args>`, and returns
/// `Result<Intent<P>, ToolError>`. Returns `P`.
fn check_prepare(cx: &Ctxt, f: &ImplItemFn, rt: &TokenStream) -> Option<Type> {
    check_common(cx, f, "prepare");
    let mut prepare = 0;
    let mut params = 0;
    for (_, pt) in typed_args(f) {
        if is_named(&pt.ty, "Prepare") {
            prepare += 1;
            if !is_mut_ref(&pt.ty) {
                cx.error_spanned_by(&pt.ty, "take the prepare context as `&mut Prepare`");
            }
        } else if type_arg(&pt.ty, "Parameters").is_some() {
            params += 1;
        } else {
            cx.error_spanned_by(&pt.ty, "a `#[prepare]` handler takes `&mut Prepare` (the trusted caller and the store transaction) and its `Parameters<Args>`, nothing else; the caller's identity comes from `Prepare::caller()`");
        }
    }
    if prepare != 1 {
        cx.error_spanned_by(&f.sig, "a `#[prepare]` handler takes the context once: `prepare: &mut Prepare`, for the trusted caller and the transaction the intent is stored in");
    }
    if params > 1 {
        cx.error_spanned_by(
            &f.sig,
            "take the tool's arguments as one `Parameters<Args>`",
        );
    }
    // Written out, the payload is read from the tokens (a mismatch is reported here); any
    // other return type, such as an alias of `Result`, is read by the compiler through
    // `PrepareReturn`, which names the expected type if it is not one.
    let payload = match &f.sig.output {
        syn::ReturnType::Type(_, ty) if is_named(ty, "Result") => type_arg(ty, "Result")
            .and_then(|ok| type_arg(ok, "Intent"))
            .cloned(),
        syn::ReturnType::Type(_, ty) => {
            let at_ty = krate::respan(rt.clone(), ty.span());
            Some(syn::parse_quote_spanned! {ty.span()=>
                <#ty as #at_ty::__private::PrepareReturn>::Payload
            })
        }
        syn::ReturnType::Default => None,
    };
    if payload.is_none() {
        cx.error_spanned_by(&f.sig, "a `#[prepare]` handler returns `Result<Intent<Payload>, ToolError>`: the intent guard stores for the confirm, or the refusal the model sees");
    }
    payload
}

/// A confirm takes only `&mut Approved<P>`: its one model-visible argument, `operation_id`,
/// is added by guard. Returns `P`.
fn check_confirm(cx: &Ctxt, f: &ImplItemFn) -> Option<Type> {
    check_common(cx, f, "confirm");
    let mut payload = None;
    for (_, pt) in typed_args(f) {
        if let Some(p) = type_arg(&pt.ty, "Approved") {
            if !is_mut_ref(&pt.ty) {
                cx.error_spanned_by(&pt.ty, "take the proof as `&mut Approved<Payload>`");
            }
            if payload.is_some() {
                cx.error_spanned_by(&pt.ty, "take the `Approved<_>` proof once");
            }
            payload = Some(p.clone());
        } else {
            confirm_extra_arg(cx, pt);
        }
    }
    if payload.is_none() {
        cx.error_spanned_by(&f.sig, "a `#[confirm]` handler must take the proof `approved: &mut Approved<Payload>`: only guard builds it, inside the locked transaction, after every check; the effect cannot run without it");
    }
    payload
}

/// An argument a confirm must not take: the model could send something other than what the
/// user confirmed.
fn confirm_extra_arg(cx: &Ctxt, pt: &syn::PatType) {
    const FIX: &str = "Take such values in the prepare tool's `Parameters<Args>`, freeze them in the `Intent` payload, and read them here from `approved.payload()`; the caller is `approved.caller()`";
    let what = if type_arg(&pt.ty, "Parameters").is_some() {
        "`Parameters<_>`".to_owned()
    } else {
        match &*pt.pat {
            Pat::Ident(pi) => format!("argument `{}`", pi.ident),
            _ => "other argument".to_owned(),
        }
    };
    cx.error_spanned_by(pt, format!("a `#[confirm]` tool takes no {what}: its only model-visible argument is `operation_id`, which guard adds, and anything else could differ from what the user saw and confirmed. {FIX}"));
}

/// Every confirm has exactly one prepare of its op, and the other way round. A side with an
/// op already reported missing or malformed is not also reported unpaired.
fn pair(cx: &Ctxt, prepares: &[PrepareFn], confirms: &[ConfirmFn]) {
    let op = |o: &Option<LitStr>| o.as_ref().map(LitStr::value);
    let all_confirms_named = confirms.iter().all(|c| c.opts.op.is_some());
    let all_prepares_named = prepares.iter().all(|p| p.opts.op.is_some());
    for (i, p) in prepares.iter().enumerate() {
        let Some(name) = op(&p.opts.op) else { continue };
        if prepares[..i]
            .iter()
            .any(|q| op(&q.opts.op).as_deref() == Some(&*name))
        {
            cx.error_spanned_by(&p.opts.op, format!("a second `#[prepare]` for op `{name}`; each op has one prepare tool and one confirm tool"));
        }
        if all_confirms_named
            && !confirms
                .iter()
                .any(|c| op(&c.opts.op).as_deref() == Some(&*name))
        {
            cx.error_spanned_by(&p.opts.op, format!("nothing confirms op `{name}`: add a `#[confirm(op = \"{name}\", recheck = ...)]` tool, or the intents this prepares can never be carried out"));
        }
    }
    for (i, c) in confirms.iter().enumerate() {
        let Some(name) = op(&c.opts.op) else { continue };
        if confirms[..i]
            .iter()
            .any(|d| op(&d.opts.op).as_deref() == Some(&*name))
        {
            cx.error_spanned_by(
                &c.opts.op,
                format!("a second `#[confirm]` for op `{name}`; each op has one confirm tool"),
            );
        }
        if all_prepares_named
            && !prepares
                .iter()
                .any(|p| op(&p.opts.op).as_deref() == Some(&*name))
        {
            let known: Vec<String> = prepares.iter().filter_map(|p| op(&p.opts.op)).collect();
            let hint = if known.is_empty() {
                String::new()
            } else {
                format!(" (this impl prepares: {})", known.join(", "))
            };
            cx.error_spanned_by(&c.opts.op, format!("no `#[prepare(op = \"{name}\", ...)]` in this impl{hint}: a confirm only carries out an intent that a prepare froze and the user saw; add the prepare tool"));
        }
    }
}

/// `#[prepare]` or `#[confirm]` expanded on its own: the impl lacks `#[operations]`.
pub fn standalone(what: &str, f: ImplItemFn) -> TokenStream {
    let message = format!(
        "`#[{what}]` needs `#[rmcp_guard::operations]` on the impl block, above `#[tool_router]`: it pairs each prepare with its confirm and adds the `get_operation_result` tool"
    );
    let error = syn::Error::new(f.sig.ident.span(), message).to_compile_error();
    stand_in::with_errors(error, f)
}
