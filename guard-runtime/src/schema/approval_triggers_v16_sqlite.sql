-- The triggers guard's approval steps (schema versions 7, 9, 10 and 13) wrote by hand on
-- SQLite, as a store up to version 16 holds them: schema step 17 drops them for the rules
-- the ledger generates. A test applies them to a store of the previous version.
CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_in_time
        BEFORE INSERT ON guard_approval_decisions
        WHEN NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING'
              AND a.expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision on an approval that is not pending or whose deadline passed; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_fixed
        BEFORE UPDATE ON guard_approval_decisions
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision on an approval is history and never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_final
        BEFORE UPDATE ON guard_approvals
        WHEN OLD.status <> 'PENDING'
    BEGIN
        SELECT RAISE(ABORT, 'guard: an ended approval never changes; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_immutable
        BEFORE UPDATE ON guard_approvals
        WHEN NEW.approval_id IS NOT OLD.approval_id OR NEW.tool IS NOT OLD.tool
          OR NEW.message IS NOT OLD.message OR NEW.target IS NOT OLD.target
          OR NEW.summary IS NOT OLD.summary OR NEW.tenant IS NOT OLD.tenant
          OR NEW.user_id IS NOT OLD.user_id OR NEW.trace_id IS NOT OLD.trace_id
          OR NEW.bound_sha256 IS NOT OLD.bound_sha256 OR NEW.expected IS NOT OLD.expected
          OR NEW.secret_label IS NOT OLD.secret_label OR NEW.required IS NOT OLD.required
          OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_decided
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status IN ('APPROVED', 'REJECTED')
          AND OLD.expires_at <= CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval past its deadline is not decided; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approved_by_enough
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'APPROVED' AND (
            SELECT count(*) FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'APPROVE') < NEW.required
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is APPROVED only with its required approvals recorded');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_rejected_by_someone
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'REJECTED' AND NOT EXISTS (
            SELECT 1 FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'REJECT')
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is REJECTED only with a rejection recorded');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_kept_while_pending
        BEFORE DELETE ON guard_approvals
        WHEN OLD.status = 'PENDING'
          AND OLD.expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a pending approval is not deleted before its deadline');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_once
        BEFORE UPDATE ON guard_approval_links
        WHEN NEW.token_sha256 IS NOT OLD.token_sha256 OR NEW.approval_id IS NOT OLD.approval_id
          OR NEW.role IS NOT OLD.role OR NEW.tenant IS NOT OLD.tenant
          OR NEW.user_id IS NOT OLD.user_id OR NEW.csrf IS NOT OLD.csrf
          OR (OLD.used_at IS NOT NULL AND NEW.used_at IS NOT OLD.used_at)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a link speaks for one person and decides once');
    END;
CREATE TRIGGER IF NOT EXISTS guard_approvals_fingerprint_fixed
        BEFORE UPDATE OF fingerprint ON guard_approvals
        WHEN NEW.fingerprint IS NOT OLD.fingerprint
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_uses_approved
        BEFORE INSERT ON guard_approval_uses
        WHEN NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'APPROVED')
    BEGIN
        SELECT RAISE(ABORT, 'guard: only an approved approval lets its effect run');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_uses_fixed
        BEFORE UPDATE ON guard_approval_uses
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval that let its effect run stays used');
    END;
CREATE TRIGGER IF NOT EXISTS guard_approval_tasks_fixed
        BEFORE UPDATE ON guard_approval_tasks
        WHEN NEW.approval_id IS NOT OLD.approval_id OR NEW.arguments IS NOT OLD.arguments
          OR OLD.result IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'guard: a task runs the call it was opened for, and ends once');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_open_pending
        BEFORE INSERT ON guard_approvals
        WHEN NEW.status <> 'PENDING' OR NEW.ended_at IS NOT NULL OR NEW.ended_by IS NOT NULL
          OR NEW.typed IS NOT NULL
          OR CASE WHEN json_valid(NEW.approvers) AND json_type(NEW.approvers) = 'array' THEN
                 EXISTS (SELECT 1 FROM json_each(NEW.approvers) e
                         WHERE e.type <> 'text' OR e.value = NEW.user_id)
                 OR (NEW.required > 1 AND json_array_length(NEW.approvers) < NEW.required)
             ELSE 1 END
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval opens pending, listing enough approvers and never its requester');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approvers_fixed
        BEFORE UPDATE OF approvers ON guard_approvals
        WHEN NEW.approvers IS NOT OLD.approvers
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approved_by_sealed
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'APPROVED' AND (
            SELECT count(*) FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'APPROVE'
              AND d.seal IS NOT NULL AND d.link_sha256 IS NOT NULL) < NEW.required
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is APPROVED only with its required approvals, each through its link');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_issued
        BEFORE INSERT ON guard_approval_links
        WHEN NEW.seal IS NULL OR NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING'
              AND a.tenant = NEW.tenant
              AND CASE NEW.role
                  WHEN 'REQUESTER' THEN a.user_id = NEW.user_id
                  ELSE a.required > 1 AND a.user_id <> NEW.user_id
                      AND EXISTS (SELECT 1 FROM json_each(a.approvers) e WHERE e.value = NEW.user_id)
                  END)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a pending approval issues links to its requester and to the approvers it lists only');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_seal_fixed
        BEFORE UPDATE OF seal ON guard_approval_links
        WHEN NEW.seal IS NOT OLD.seal
    BEGIN
        SELECT RAISE(ABORT, 'guard: a link speaks for one person and decides once');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_through_a_link
        BEFORE INSERT ON guard_approval_decisions
        WHEN NEW.seal IS NULL OR NOT EXISTS (
            SELECT 1 FROM guard_approval_links l
                JOIN guard_approvals a ON a.approval_id = l.approval_id
            WHERE l.token_sha256 = NEW.link_sha256 AND l.approval_id = NEW.approval_id
              AND l.tenant = NEW.tenant AND l.user_id = NEW.user_id AND l.used_at IS NULL
              AND a.tenant = NEW.tenant
              AND CASE l.role
                  WHEN 'REQUESTER' THEN a.user_id = NEW.user_id
                      AND (a.required = 1 OR NEW.decision = 'REJECT')
                  ELSE a.required > 1 AND a.user_id <> NEW.user_id
                      AND EXISTS (SELECT 1 FROM json_each(a.approvers) e WHERE e.value = NEW.user_id)
                  END)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision comes through its own unused link, from an approver the approval lists (the requester approves only what needs no one else)');
    END;
