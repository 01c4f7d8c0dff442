-- The triggers guard's approval steps (schema versions 7, 9, 10 and 13) wrote by hand on
-- PostgreSQL, as a store up to version 16 holds them: schema step 17 drops them for the rules
-- the ledger generates. A test applies them to a store of the previous version.
CREATE OR REPLACE FUNCTION guard_approval_decisions_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
    found_expiry bigint;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'guard: a decision on approval % is history and never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    -- Locked, so a decision and a change of the approval's status take turns.
    EXECUTE pg_catalog.format(
        'SELECT status, expires_at FROM %I.guard_approvals WHERE approval_id = $1 FOR UPDATE',
        TG_TABLE_SCHEMA)
        INTO found_status, found_expiry USING NEW.approval_id;
    IF found_status IS DISTINCT FROM 'PENDING' OR found_expiry
            <= (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint THEN
        RAISE EXCEPTION 'guard: approval % is not pending or its deadline passed, so no decision is taken', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Ask for the action again.';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approvals_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    now_ms bigint := (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint;
    approvals bigint;
    rejections bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status = 'PENDING' AND OLD.expires_at > now_ms THEN
            RAISE EXCEPTION 'guard: approval % is pending and is not deleted before its deadline', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status IS DISTINCT FROM 'PENDING' THEN
        RAISE EXCEPTION 'guard: approval % is % and never changes', OLD.approval_id, OLD.status
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Ask for the action again.';
    END IF;
    IF NEW.approval_id IS DISTINCT FROM OLD.approval_id OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.message IS DISTINCT FROM OLD.message OR NEW.target IS DISTINCT FROM OLD.target
            OR NEW.summary IS DISTINCT FROM OLD.summary OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.trace_id IS DISTINCT FROM OLD.trace_id
            OR NEW.bound_sha256 IS DISTINCT FROM OLD.bound_sha256
            OR NEW.expected IS DISTINCT FROM OLD.expected
            OR NEW.secret_label IS DISTINCT FROM OLD.secret_label
            OR NEW.required IS DISTINCT FROM OLD.required
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at THEN
        RAISE EXCEPTION 'guard: what approval % asks, of whom and until when never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status IN ('APPROVED', 'REJECTED') THEN
        IF OLD.expires_at <= now_ms THEN
            RAISE EXCEPTION 'guard: approval % is past its deadline and is not decided', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation',
                      HINT = 'Ask for the action again.';
        END IF;
        EXECUTE pg_catalog.format(
            'SELECT count(*) FILTER (WHERE decision = ''APPROVE''),
                    count(*) FILTER (WHERE decision = ''REJECT'')
             FROM %I.guard_approval_decisions WHERE approval_id = $1', TG_TABLE_SCHEMA)
            INTO approvals, rejections USING NEW.approval_id;
        IF NEW.status = 'APPROVED' AND approvals < NEW.required THEN
            RAISE EXCEPTION 'guard: approval % has % of % approvals and is not APPROVED', NEW.approval_id, approvals, NEW.required
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.status = 'REJECTED' AND rejections = 0 THEN
            RAISE EXCEPTION 'guard: approval % has no rejection and is not REJECTED', NEW.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_links_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.token_sha256 IS DISTINCT FROM OLD.token_sha256
            OR NEW.approval_id IS DISTINCT FROM OLD.approval_id
            OR NEW.role IS DISTINCT FROM OLD.role OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.csrf IS DISTINCT FROM OLD.csrf
            OR (OLD.used_at IS NOT NULL AND NEW.used_at IS DISTINCT FROM OLD.used_at) THEN
        RAISE EXCEPTION 'guard: a link of approval % speaks for one person and decides once', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approval_decisions_check
    BEFORE INSERT OR UPDATE ON guard_approval_decisions
    FOR EACH ROW EXECUTE FUNCTION guard_approval_decisions_check();
CREATE TRIGGER guard_approvals_check
    BEFORE UPDATE OR DELETE ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_check();
CREATE TRIGGER guard_approval_links_check
    BEFORE UPDATE ON guard_approval_links
    FOR EACH ROW EXECUTE FUNCTION guard_approval_links_check();


CREATE OR REPLACE FUNCTION guard_approvals_fingerprint_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.fingerprint IS DISTINCT FROM OLD.fingerprint THEN
        RAISE EXCEPTION 'guard: what approval % asks, of whom and until when never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_uses_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'guard: approval % let its effect run and stays used', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT status FROM %I.guard_approvals WHERE approval_id = $1 FOR UPDATE',
        TG_TABLE_SCHEMA)
        INTO found_status USING NEW.approval_id;
    IF found_status IS DISTINCT FROM 'APPROVED' THEN
        RAISE EXCEPTION 'guard: approval % is not approved, so it lets no effect run', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approvals_fingerprint_check
    BEFORE UPDATE OF fingerprint ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_fingerprint_check();
CREATE TRIGGER guard_approval_uses_check
    BEFORE INSERT OR UPDATE ON guard_approval_uses
    FOR EACH ROW EXECUTE FUNCTION guard_approval_uses_check();


CREATE OR REPLACE FUNCTION guard_approval_tasks_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.approval_id IS DISTINCT FROM OLD.approval_id
            OR NEW.arguments IS DISTINCT FROM OLD.arguments OR OLD.result IS NOT NULL THEN
        RAISE EXCEPTION 'guard: task % runs the call it was opened for, and ends once', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approval_tasks_check
    BEFORE UPDATE ON guard_approval_tasks
    FOR EACH ROW EXECUTE FUNCTION guard_approval_tasks_check();


CREATE OR REPLACE FUNCTION guard_approvals_sealed_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    listed jsonb;
    sealed bigint;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.approvers IS DISTINCT FROM OLD.approvers THEN
            RAISE EXCEPTION 'guard: whom approval % asks never changes', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.status = 'APPROVED' AND OLD.status IS DISTINCT FROM 'APPROVED' THEN
            EXECUTE pg_catalog.format(
                'SELECT count(*) FROM %I.guard_approval_decisions
                 WHERE approval_id = $1 AND decision = ''APPROVE''
                   AND seal IS NOT NULL AND link_sha256 IS NOT NULL', TG_TABLE_SCHEMA)
                INTO sealed USING NEW.approval_id;
            IF sealed < NEW.required THEN
                RAISE EXCEPTION 'guard: approval % has % of % approvals through their links and is not APPROVED', NEW.approval_id, sealed, NEW.required
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    BEGIN
        listed := NEW.approvers::jsonb;
    EXCEPTION WHEN others THEN
        listed := NULL;
    END;
    IF NEW.status IS DISTINCT FROM 'PENDING' OR NEW.ended_at IS NOT NULL
            OR NEW.ended_by IS NOT NULL OR NEW.typed IS NOT NULL
            OR listed IS NULL OR pg_catalog.jsonb_typeof(listed) IS DISTINCT FROM 'array'
            OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(listed) AS e(v)
                       WHERE pg_catalog.jsonb_typeof(e.v) <> 'string' OR e.v #>> '{}' = NEW.user_id)
            OR (NEW.required > 1 AND pg_catalog.jsonb_array_length(listed) < NEW.required) THEN
        RAISE EXCEPTION 'guard: approval % opens pending, listing enough approvers and never its requester', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_links_issued_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
    found_tenant text;
    found_user text;
    found_required bigint;
    found_listed text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.seal IS DISTINCT FROM OLD.seal THEN
            RAISE EXCEPTION 'guard: a link of approval % speaks for one person and decides once', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT status, tenant, user_id, required, approvers FROM %I.guard_approvals
         WHERE approval_id = $1', TG_TABLE_SCHEMA)
        INTO found_status, found_tenant, found_user, found_required, found_listed
        USING NEW.approval_id;
    IF NEW.seal IS NULL OR found_status IS DISTINCT FROM 'PENDING'
            OR found_tenant IS DISTINCT FROM NEW.tenant
            OR (NEW.role = 'REQUESTER' AND found_user IS DISTINCT FROM NEW.user_id)
            OR (NEW.role = 'APPROVER' AND (found_required <= 1 OR found_user = NEW.user_id
                OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements_text(found_listed::jsonb) AS e(v)
                               WHERE e.v = NEW.user_id))) THEN
        RAISE EXCEPTION 'guard: pending approval % issues links to its requester and to the approvers it lists only', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_decisions_sealed_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    link_role text;
    found_tenant text;
    found_user text;
    found_required bigint;
    found_listed text;
BEGIN
    EXECUTE pg_catalog.format(
        'SELECT l.role, a.tenant, a.user_id, a.required, a.approvers
         FROM %I.guard_approval_links l JOIN %I.guard_approvals a ON a.approval_id = l.approval_id
         WHERE l.token_sha256 = $1 AND l.approval_id = $2 AND l.tenant = $3 AND l.user_id = $4
           AND l.used_at IS NULL', TG_TABLE_SCHEMA, TG_TABLE_SCHEMA)
        INTO link_role, found_tenant, found_user, found_required, found_listed
        USING NEW.link_sha256, NEW.approval_id, NEW.tenant, NEW.user_id;
    IF NEW.seal IS NULL OR link_role IS NULL OR found_tenant IS DISTINCT FROM NEW.tenant
            OR (link_role = 'REQUESTER' AND (found_user IS DISTINCT FROM NEW.user_id
                OR (found_required > 1 AND NEW.decision = 'APPROVE')))
            OR (link_role = 'APPROVER' AND (found_required <= 1 OR found_user = NEW.user_id
                OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements_text(found_listed::jsonb) AS e(v)
                               WHERE e.v = NEW.user_id))) THEN
        RAISE EXCEPTION 'guard: a decision on approval % comes through its own unused link, from an approver the approval lists (the requester approves only what needs no one else)', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approvals_sealed_check
    BEFORE INSERT OR UPDATE ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_sealed_check();
CREATE TRIGGER guard_approval_links_issued_check
    BEFORE INSERT OR UPDATE ON guard_approval_links
    FOR EACH ROW EXECUTE FUNCTION guard_approval_links_issued_check();
CREATE TRIGGER guard_approval_decisions_sealed_check
    BEFORE INSERT ON guard_approval_decisions
    FOR EACH ROW EXECUTE FUNCTION guard_approval_decisions_sealed_check();
