//! A `SECURITY DEFINER` function rendered with every safeguard PostgreSQL's documentation
//! asks for, for a deployment whose server role may do one narrow thing on a table it may
//! not otherwise touch.

use super::names::{identifier, type_name};
use crate::store::sql::StoreError;

/// A `SECURITY DEFINER` function for [`definer_function_sql`] to render.
///
/// The body runs with its owner's rights whoever calls it, so it must name every table,
/// view, function and type with its schema (`orders.orders`, not `orders`): the rendered
/// `search_path` already puts the caller's temporary schema last, and qualified names leave
/// nothing for a caller to shadow at all.
#[derive(Debug, Clone)]
pub struct DefinerFunction<'a> {
    /// The schema the function lives in; also the only schema on its `search_path`.
    pub schema: &'a str,
    /// The function's name.
    pub name: &'a str,
    /// Parameters, as (name, type): `&[("p_tenant", "TEXT"), ("p_order", "BIGINT")]`.
    pub params: &'a [(&'a str, &'a str)],
    /// What it returns: `TEXT`, `SETOF TEXT`, `TABLE (status TEXT)`, `void`.
    pub returns: &'a str,
    /// `sql` or `plpgsql`.
    pub language: &'a str,
    /// The body, every reference schema-qualified.
    pub body: &'a str,
    /// The role that owns the function and whose rights it runs with: an existing `NOLOGIN`
    /// role that is not a superuser and holds only what the body needs.
    pub owner: &'a str,
    /// The roles that may call it; nobody else may (EXECUTE is revoked from `PUBLIC`).
    pub callers: &'a [&'a str],
}

/// Renders `function` as hardened statements, to run as one batch (one transaction, e.g.
/// with `batch_execute`) by a role allowed to create the function and hand it to its owner
/// (a superuser, or a member of the owner role that may create in the schema).
///
/// The statements follow this checklist, every item of which a `SECURITY DEFINER`
/// function needs:
///
/// 1. **`SET search_path = <schema>, pg_temp`**, with `pg_temp` explicitly last. PostgreSQL
///    searches the caller's temporary schema *first* for tables and views unless `pg_temp`
///    is named in the path, and every role may create temporary tables by default, so
///    without it a caller's `CREATE TEMP VIEW orders AS …` runs inside the function with
///    the owner's rights. A caller's own `SET search_path` does not reach the function.
/// 2. **Every reference schema-qualified** in the body (see [`DefinerFunction`]).
/// 3. **A dedicated owner role**, `NOLOGIN`, not a superuser, without `BYPASSRLS`, holding
///    only the rights the body needs; the rendered batch first checks this and that no
///    caller is a member of it (which would let the caller act as the owner outright), and
///    refuses with an error otherwise.
/// 4. **`EXECUTE` revoked from `PUBLIC`** (PostgreSQL grants it to everyone on creation, so
///    the revoke is in the same transaction) and granted only to `callers`.
/// 5. Recommended outside this function: revoke `TEMPORARY` on the database from `PUBLIC`
///    (`REVOKE TEMPORARY ON DATABASE db FROM PUBLIC`) and grant it back only to roles that
///    need temporary tables, so callers cannot even create the objects item 1 guards against.
///
/// Names must be plain lowercase PostgreSQL names, types plain type names, and the body
/// may not contain the `$guard_definer$` quote; anything else is refused with a message
/// naming the part.
pub fn definer_function_sql(function: &DefinerFunction<'_>) -> Result<String, StoreError> {
    const QUOTE: &str = "$guard_definer$";
    let schema = identifier("schema", function.schema)?;
    let name = identifier("function name", function.name)?;
    let owner = identifier("owner role", function.owner)?;
    let language = match function.language.to_ascii_lowercase().as_str() {
        "sql" => "sql",
        "plpgsql" => "plpgsql",
        other => {
            return Err(StoreError::Other(format!(
                "language `{other}` is not one definer_function_sql writes; use sql or plpgsql"
            )));
        }
    };
    let returns = type_name("return type", function.returns)?;
    if function.body.contains(QUOTE) {
        return Err(StoreError::Other(format!(
            "the body of {schema}.{name} contains {QUOTE}, the quote it is written in; remove it"
        )));
    }
    if function.callers.is_empty() {
        return Err(StoreError::Other(format!(
            "{schema}.{name} has no callers; name the role that may execute it"
        )));
    }
    let mut params = Vec::new();
    let mut types = Vec::new();
    for (param, ty) in function.params {
        params.push(format!(
            "{} {}",
            identifier("parameter", param)?,
            type_name("parameter type", ty)?
        ));
        types.push(*ty);
    }
    let mut callers = Vec::new();
    for caller in function.callers {
        let caller = identifier("caller role", caller)?;
        if caller == owner {
            return Err(StoreError::Other(format!(
                "{caller} is both the owner and a caller of {schema}.{name}; the owner must be a role of its own that nobody logs in as"
            )));
        }
        callers.push(caller);
    }
    let signature = format!("{schema}.{name}({})", types.join(", "));
    let mut sql = format!(
        "DO {QUOTE} BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{owner}'
                            AND NOT rolsuper AND NOT rolcanlogin AND NOT rolbypassrls) THEN
                 RAISE EXCEPTION 'the owner of {signature} must be an existing NOLOGIN role that is not a superuser and does not bypass row security: {owner} is not'
                     USING HINT = 'CREATE ROLE {owner} NOLOGIN, grant it only what the function needs, and run this again.';
             END IF;
         END {QUOTE};
         CREATE OR REPLACE FUNCTION {schema}.{name}({params}) RETURNS {returns}
             LANGUAGE {language} SECURITY DEFINER SET search_path = {schema}, pg_temp
             AS {QUOTE}{body}{QUOTE};
         ALTER FUNCTION {signature} OWNER TO {owner};
         REVOKE ALL ON FUNCTION {signature} FROM PUBLIC;
         GRANT EXECUTE ON FUNCTION {signature} TO {callers};",
        params = params.join(", "),
        body = function.body,
        callers = callers.join(", "),
    );
    for caller in &callers {
        sql.push_str(&format!(
            "
         DO {QUOTE} BEGIN
             IF pg_catalog.pg_has_role('{caller}', '{owner}', 'MEMBER') THEN
                 RAISE EXCEPTION '{caller} may act as {owner}, the owner of {signature}, so the function protects nothing from it'
                     USING HINT = 'REVOKE {owner} FROM {caller}, and make sure {caller} is not a superuser.';
             END IF;
         END {QUOTE};"
        ));
    }
    Ok(sql)
}

#[cfg(test)]
mod tests {
    use super::{DefinerFunction, definer_function_sql};

    fn lock() -> DefinerFunction<'static> {
        DefinerFunction {
            schema: "shop",
            name: "lock_order",
            params: &[("p_tenant", "TEXT"), ("p_order", "BIGINT")],
            returns: "TEXT",
            language: "sql",
            body: "SELECT status FROM shop.orders WHERE order_id = p_order FOR SHARE",
            owner: "shop_definer",
            callers: &["shop_app"],
        }
    }

    #[test]
    fn renders_pg_temp_last_owner_and_revoke_before_grant() {
        let sql = definer_function_sql(&lock()).unwrap();
        assert!(sql.contains("SECURITY DEFINER SET search_path = shop, pg_temp"));
        assert!(
            sql.contains("ALTER FUNCTION shop.lock_order(TEXT, BIGINT) OWNER TO shop_definer;")
        );
        let revoke = sql
            .find("REVOKE ALL ON FUNCTION shop.lock_order(TEXT, BIGINT) FROM PUBLIC;")
            .unwrap();
        let grant = sql
            .find("GRANT EXECUTE ON FUNCTION shop.lock_order(TEXT, BIGINT) TO shop_app;")
            .unwrap();
        assert!(revoke < grant);
        assert!(sql.contains("NOT rolsuper AND NOT rolcanlogin AND NOT rolbypassrls"));
        assert!(sql.contains("pg_has_role('shop_app', 'shop_definer', 'MEMBER')"));
    }

    #[test]
    fn refuses_what_it_cannot_write_safely() {
        let cases: [(DefinerFunction<'static>, &str); 7] = [
            (
                DefinerFunction {
                    schema: "Shop",
                    ..lock()
                },
                "schema `Shop`",
            ),
            (
                DefinerFunction {
                    name: "x; DROP",
                    ..lock()
                },
                "function name",
            ),
            (
                DefinerFunction {
                    owner: "shop_app",
                    ..lock()
                },
                "both the owner and a caller",
            ),
            (
                DefinerFunction {
                    callers: &[],
                    ..lock()
                },
                "has no callers",
            ),
            (
                DefinerFunction {
                    language: "c",
                    ..lock()
                },
                "language `c`",
            ),
            (
                DefinerFunction {
                    body: "$guard_definer$; DROP TABLE x; --",
                    ..lock()
                },
                "contains $guard_definer$",
            ),
            (
                DefinerFunction {
                    params: &[("p", "TEXT'); DROP")],
                    ..lock()
                },
                "parameter type",
            ),
        ];
        for (function, expected) in cases {
            let error = definer_function_sql(&function).unwrap_err().to_string();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }
}
