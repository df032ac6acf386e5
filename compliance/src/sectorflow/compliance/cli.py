"""``sectorflow audit ...``: key generation, verification, proofs, SIEM export, checkpoint export, archiving.

The acting user is the operating-system user; reading commands need the audit-admin role
(``SECTORFLOW_AUDIT_ADMINS``) and are themselves recorded. ``verify`` exits 1 on tampering.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from . import runtime
from .errors import AuditConfigError, AuditWriteError, ProofError
from .records import utc_iso

if TYPE_CHECKING:  # pragma: no cover
    from .admin import AuditAdmin
    from .log import AuditLog
    from .verify import VerifyReport

audit_app = typer.Typer(help="Tamper-evident audit log: verify, prove, export, archive.", no_args_is_help=True)


def _log() -> AuditLog:
    """The configured log, for commands that read or administer it: it must already exist (a mistyped or deleted
    SQLite path must not verify as an empty, untampered log)."""
    cfg = runtime.config()
    db = cfg.db
    # The embedded default is made by the first use, a read included: no path was typed, so none can be mistyped.
    if db and not cfg.embedded and not db.startswith(("postgresql://", "postgres://")) and not Path(db).is_file():
        raise AuditConfigError(f"No audit log at {db} (SECTORFLOW_AUDIT_DB): the file does not exist. Check the path; "
                               f"a log is created by the first recorded event, never by a read.")
    lg = runtime.get_log()
    if lg is None:
        raise AuditConfigError("The audit log is off (SECTORFLOW_AUDIT=off): unset SECTORFLOW_AUDIT to turn it on.")
    return lg


def _admin(action: str = "audit.read") -> AuditAdmin:
    from .admin import AuditAdmin

    return AuditAdmin(_log(), getpass.getuser(), source="cli", action=action)


def _when(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r}: give an ISO-8601 date or time, e.g. 2026-01-31T00:00:00Z.") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return utc_iso(when)


def _trusted(trust: Optional[Path]) -> dict[str, bytes]:
    from .keys import load_trust_file

    if trust is not None:
        return load_trust_file(trust)
    return _log().keys.trusted_keys()


@audit_app.command("keygen")
def keygen(path: Path = typer.Argument(..., help="Where to write the key file (outside the database folder)."),
           trust_out: Optional[Path] = typer.Option(None, help="Also write the public trust file here."),
           force: bool = typer.Option(False, help="Overwrite an existing key file (old digests stop matching).")) -> None:
    """Create a key file: Ed25519 signing key, HMAC digest key, payload key-wrapping key (mode 0600)."""
    from .keys import generate_key_file, write_trust_file

    kf = generate_key_file(path, overwrite=force)
    if trust_out:
        write_trust_file(kf.trusted_keys(), trust_out)
    typer.echo(f"{kf.key_id} written to {path}")


@audit_app.command("trust")
def trust(out: Path = typer.Argument(..., help="Trust file to write (public keys only).")) -> None:
    """Write the public keys of the configured key file, for a third party who verifies offline."""
    from .keys import load_key_file, write_trust_file

    write_trust_file(load_key_file(runtime.config().key_file or "").trusted_keys(), out)
    typer.echo(f"public keys written to {out}")


@audit_app.command("rotate-key")
def rotate_key(reason: Optional[str] = typer.Option(None, help="Why (recorded).")) -> None:
    """Replace the signing key; the rotation is recorded and signed by the old key."""
    admin = _admin()
    typer.echo(admin.log.rotate_key(actor=admin.actor, source="cli", reason=reason))


def _verify_as_found(trust: Optional[Path], external: Optional[list[dict[str, Any]]],
                     cause: Exception) -> VerifyReport:
    """Verify a store that cannot be opened as a log (e.g. a forged checkpoint or a seq rewritten as text), read
    only: the audit-admin role is checked against the configuration, and the refused opening is the first problem.
    Nothing can be recorded in such a store, so this read leaves no ``audit.read`` record."""
    from .errors import AuditAccessDenied
    from .keys import load_key_file, load_trust_file
    from .store import open_store
    from .verify import verify_log

    cfg = runtime.config()
    actor = getpass.getuser()
    if actor not in cfg.audit_admins or actor in cfg.operators:
        raise AuditAccessDenied(f"{actor!r} may not verify the audit log: it needs the audit-admin role "
                                f"(SECTORFLOW_AUDIT_ADMINS), held by nobody who is also an operator.") from cause
    keys = load_trust_file(trust) if trust is not None else load_key_file(cfg.key_file or "").trusted_keys()
    store = open_store(cfg.db or "", pg_schema=cfg.pg_schema, sqlite_synchronous=cfg.sqlite_synchronous)
    try:
        report = verify_log(store, keys, external=external)
    finally:
        store.close()
    report.problems.insert(0, f"the log cannot be opened: {cause} (this verify could not be recorded)")
    report.ok = False
    return report


@audit_app.command("verify")
def verify(trust: Optional[Path] = typer.Option(None, help="Trust file (default: the configured key file)."),
           checkpoints: Optional[Path] = typer.Option(None, help="Checkpoints kept by a third party (JSON lines)."),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Recompute every leaf and root from the store and check every checkpoint signature. Exit 1 on tampering."""
    external = None
    if checkpoints is not None:
        external = [json.loads(line) for line in checkpoints.read_text(encoding="utf-8").splitlines() if line]
    replica = _verify_replica(trust)
    if replica is not None and replica[0] is not None and replica[0].ok:
        external = (external or []) + replica[2]  # the replica's checkpoints vouch for the store (truncation)
    try:
        report = _admin().verify(_trusted(trust), external)
    except AuditWriteError as exc:  # the store's contents stop the log from opening: verify the store as found
        report = _verify_as_found(trust, external, exc)
    if replica is not None:
        rep, problem, _cps = replica
        report.replica = {"ok": rep is not None and rep.ok, "size": rep.size if rep else None,
                          "problems": [problem] if problem else rep.problems if rep else []}
        if problem or rep is None or not rep.ok:
            report.ok = False
            report.problems.append(f"replica: {problem or '; '.join(rep.problems[:3]) if rep else problem}")
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(f"records: {report.size}  checkpoints verified: {report.checkpoints}  archived: {report.archived}"
                   f"  unsigned tail: {report.unsigned_tail}  root: {report.root}")
        if report.unsigned_at_open:
            typer.echo(f"WARNING: {report.unsigned_at_open} record(s) had no checkpoint when this command opened the "
                       f"log and were signed now (a writer still running or one that stopped before its "
                       f"checkpoint signs later; or checkpoints were deleted): only checkpoints kept elsewhere (--checkpoints FILE) can vouch for them.")
        if report.replica is not None:
            rep = report.replica
            typer.echo(f"replica: {'OK' if rep['ok'] else 'BAD'}  records: {rep['size']}"
                       + (f"  ({'; '.join(rep['problems'][:3])})" if rep["problems"] else ""))
        if report.ok:
            typer.echo("OK: no tampering found")
        else:
            typer.echo(f"TAMPERED: first bad record {report.first_bad_seq}")
            for problem in report.problems:
                typer.echo(f"  {problem}")
    if not report.ok:
        raise SystemExit(1)


def _verify_replica(trust: Optional[Path]) -> Optional[tuple[Optional[VerifyReport], Optional[str], list[dict[str, Any]]]]:
    """``(report, problem, checkpoints)`` of the configured replica, verified on its own (``None``: no replica)."""
    from .keys import load_key_file, load_trust_file
    from .verify import verify_log

    cfg = runtime.config()
    if not cfg.replica:
        return None
    if not cfg.replica.startswith(("postgresql://", "postgres://")) and not Path(cfg.replica.removeprefix(
            "sqlite://")).is_file():
        return None, f"no replica at {cfg.replica} (SECTORFLOW_AUDIT_REPLICA): the file does not exist", []
    try:
        store = _open_raw(cfg.replica, cfg.replica_pg_schema or cfg.pg_schema)
    except AuditConfigError as exc:
        return None, f"the replica cannot be opened: {exc}", []
    try:
        keys = load_trust_file(trust) if trust is not None else load_key_file(cfg.key_file or "").trusted_keys()
        log_id = store.get_meta("log_id")
        report = verify_log(store, keys, log_id=log_id)
        return report, None, [cp.to_json(log_id or "") for cp in store.checkpoints()]
    finally:
        store.close()


def _open_raw(url: str, schema: str) -> Any:
    from .store import open_store

    return open_store(url, pg_schema=schema, sqlite_synchronous=runtime.config().sqlite_synchronous)


@audit_app.command("restore")
def restore(source: str = typer.Option(..., "--from", help="The replica: SQLite file or postgresql:// DSN."),
            schema: Optional[str] = typer.Option(None, help="PostgreSQL schema of the replica (default: the "
                                                            "configured replica_pg_schema or pg_schema)."),
            trust: Optional[Path] = typer.Option(None, help="Trust file (default: the configured key file)."),
            displaced: Optional[Path] = typer.Option(None, help="Where to keep the rows replaced (JSON lines; "
                                                                "default beside the store)."),
            as_json: bool = typer.Option(False, "--json", help="Print what was repaired as JSON.")) -> None:
    """Repair altered, deleted or truncated records (and checkpoints) of the store from a replica that verifies;
    a replica that does not verify is refused and nothing changes. Then verify the store. Exit 1 if it still fails."""
    from .keys import load_key_file, load_trust_file
    from .restore import restore_from

    cfg = runtime.config()
    _require_admin("audit.restore")
    if not source.startswith(("postgresql://", "postgres://")) and not Path(source.removeprefix("sqlite://")).is_file():
        raise AuditConfigError(f"No replica at {source}: the file does not exist.")
    keys = load_trust_file(trust) if trust is not None else load_key_file(cfg.key_file or "").trusted_keys()
    runtime.reset()  # no log of this process may hold the store open while it is repaired
    primary = _open_raw(cfg.db or "", cfg.pg_schema)
    replica_store = _open_raw(source, schema or cfg.replica_pg_schema or cfg.pg_schema)
    try:
        result = restore_from(primary, replica_store, keys)
    finally:
        replica_store.close()
        primary.close()
    details: dict[str, Any] = {"replica": _safe(source), **result.to_json()}
    if result.displaced:  # keep what was replaced: evidence, or records written after a truncation
        out = displaced or Path(f"{cfg.db if not cfg.db.startswith('postgres') else 'audit'}"
                                f".displaced-{utc_iso().replace(':', '')}.jsonl")
        _write_displaced(result.displaced, out)
        details.update(displaced_file=str(out), displaced_sha256=hashlib.sha256(out.read_bytes()).hexdigest())
    lg = _log()
    lg.append("audit.restored", actor=getpass.getuser(), source="cli", outcome="success", details=details)
    report = _admin().verify(_trusted(trust))
    if as_json:
        typer.echo(json.dumps({"restored": details, "verify": report.to_json()}, indent=2))
    else:
        typer.echo(f"restored from {_safe(source)}: {len(result.missing)} missing and {len(result.altered)} altered "
                   f"record(s) put back, {result.removed} stray row(s) removed, {result.checkpoints} checkpoint(s) "
                   f"put back; {result.kept_beyond} newer record(s) kept")
        if result.displaced:
            typer.echo(f"the {len(result.displaced)} row(s) replaced are kept in {details['displaced_file']}")
        typer.echo("OK: no tampering found" if report.ok else f"TAMPERED: first bad record {report.first_bad_seq}")
        for problem in report.problems:
            typer.echo(f"  {problem}")
    if not report.ok:
        raise SystemExit(1)


def _write_displaced(rows: list[Any], out: Path) -> None:
    from sectorflow import writable_file

    from .records import b64

    writable_file(out, what="file of replaced rows", setting="--displaced")
    with open(out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({"seq": r.seq, "time": r.time, "event": r.event, "archive": r.archive,
                                 "leaf": b64(r.leaf), "body": r.body.decode("utf-8", "replace") if r.body else None})
                     + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _safe(url: str) -> str:
    from .admin import _safe_url

    return _safe_url(url)


def _require_admin(action: str) -> None:
    """Refuse ``action`` unless the OS user is an audit admin, for commands that must not open the log before they
    run (restore): the role is read from the store's pinned policy (or the configuration) without opening the log;
    a refusal is recorded as ``access.decision`` ``denied`` when the log can be opened."""
    from .errors import AuditAccessDenied
    from .policy import admins_of, read_policy

    cfg = runtime.config()
    actor = getpass.getuser()
    try:
        store = _open_raw(cfg.db or "", cfg.pg_schema)
        try:
            admins, operators = admins_of(store, cfg), set((read_policy(store) or {}).get("operators", cfg.operators))
        finally:
            store.close()
    except AuditConfigError:
        admins, operators = cfg.audit_admins, set(cfg.operators)
    if actor in admins and actor not in operators:
        return
    try:
        lg = runtime.get_log()
        if lg is not None:
            lg.append("access.decision", actor=actor, source="cli", outcome="denied",
                      reason=f"{actor!r} is not an audit admin", details={"action": action, "roles": []})
    except Exception:  # noqa: BLE001 - a store too damaged to open cannot record the refusal; it is still refused
        pass
    raise AuditAccessDenied(f"{actor!r} may not run {action}: it needs the audit-admin role (SECTORFLOW_AUDIT_ADMINS "
                            f"or the pinned audit policy), held by nobody who is also an operator.")


@audit_app.command("policy")
def policy_command(set_: list[str] = typer.Option([], "--set", help="KEY=VALUE to pin (repeatable), e.g. "
                                                  "regulated=aml,federated or retention_days=365."),
                   as_json: bool = typer.Option(False, "--json", help="Print the policy as JSON.")) -> None:
    """Show, or (audit admin) pin, the audit policy: settings no other user's process can change or turn off."""
    from .policy import parse_settings, read_policy

    admin = _admin("audit.policy" if set_ else "audit.read")
    policy = admin.set_policy(parse_settings(set_)) if set_ else (read_policy(admin.log.store) or {})
    typer.echo(json.dumps(policy, indent=2 if as_json else None, sort_keys=True) if policy or as_json
               else "no policy pinned: every process uses its own settings")


@audit_app.command("prove")
def prove(seq: int = typer.Argument(..., help="Sequence number of the record."),
          out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the proof here (default stdout).")) -> None:
    """Print an RFC 9162 inclusion proof of record SEQ with the signed checkpoint it leads to."""
    text = json.dumps(_admin().prove(seq), indent=2)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
    else:
        typer.echo(text)


@audit_app.command("check-proof")
def check_proof(proof: Path = typer.Argument(..., help="A proof file from `prove`, or an archive file (.jsonl.gz)."),
                trust: Path = typer.Option(..., help="Trust file with the signer's public key.")) -> None:
    """Check a proof (or every record of an archive file) offline: no store, no secret key. Exit 1 if bad."""
    from .admin import read_archive
    from .keys import load_trust_file
    from .verify import verify_proof_document

    keys = load_trust_file(trust)
    try:
        if proof.name.endswith(".gz"):
            _head, docs = read_archive(proof)
        else:
            docs = [json.loads(proof.read_text(encoding="utf-8"))]
    except (OSError, EOFError, ValueError, KeyError, IndexError) as exc:  # gzip.BadGzipFile is an OSError
        raise ProofError(f"{proof} is not a proof file (from `sectorflow audit prove`) or an archive file (from "
                         f"`sectorflow audit archive`): {type(exc).__name__}: {exc}") from exc
    for doc in docs:
        if not isinstance(doc, dict):
            raise ProofError(f"{proof} is not a proof file (from `sectorflow audit prove`): it holds JSON "
                             f"{type(doc).__name__}, not an object.")
        try:
            verify_proof_document(doc, keys)
        except Exception as exc:
            typer.echo(f"BAD: record {doc.get('leaf_index')}: {exc}")
            raise SystemExit(1) from exc
    typer.echo(f"OK: {len(docs)} record(s) proven")


@audit_app.command("export")
def export(since: Optional[str] = typer.Option(None, help="ISO-8601 UTC start (inclusive)."),
           until: Optional[str] = typer.Option(None, help="ISO-8601 UTC end (exclusive)."),
           out: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON lines file (default stdout).")) -> None:
    """Write records as JSON lines for a SIEM."""
    stream = open(out, "w", encoding="utf-8") if out else sys.stdout
    try:
        for row in _admin().export(_when(since), _when(until)):
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out:
            stream.close()


@audit_app.command("checkpoints")
def checkpoints_command(out: Path = typer.Argument(..., help="JSON lines file a third party keeps (appended).")) -> None:
    """Append the signed checkpoints not yet in OUT (give OUT to an independent party)."""
    typer.echo(f"{_admin().export_checkpoints(out)} checkpoint(s) added to {out}")


@audit_app.command("note")
def note_command(size: Optional[int] = typer.Option(None, help="Tree size of the checkpoint (default: the latest, "
                                                               "signed now)."),
                 out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the note here."),
                 vkey: bool = typer.Option(False, help="Print the verifier key instead of the note.")) -> None:
    """Print a checkpoint as a C2SP tlog-checkpoint signed note (for transparency-log tools and witnesses)."""
    note, key = _admin().checkpoint_note(size)
    if vkey:
        typer.echo(key)
    elif out:
        out.write_text(note, encoding="utf-8")
        typer.echo(f"checkpoint note written to {out}")
    else:
        typer.echo(note, nl=False)


@audit_app.command("archive")
def archive(out: Path = typer.Argument(..., help="Folder for archive files."),
            now: Optional[str] = typer.Option(None, help="Archive as of this time instead of the clock's "
                                                         "(ISO-8601); a time later than now is refused.")) -> None:
    """Move records older than the retention period into an archive file with their proofs."""
    when = datetime.fromisoformat(_when(now).replace("Z", "+00:00")) if now else None
    path = _admin("audit.archive").archive_expired(out, now=when)
    typer.echo(f"archived to {path}" if path else "nothing has expired")


@audit_app.command("shred")
def shred(subject: str = typer.Argument(..., help="The data subject's id (as in the configured subject field)."),
          reason: Optional[str] = typer.Option(None, help="E.g. the PIPL deletion request's reference.")) -> None:
    """Crypto-shred one data subject's encrypted payloads (the chain stays verifiable)."""
    typer.echo(f"{_admin().shred_subject(subject, reason)} payload(s) shredded")


@audit_app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
    """Show where the log is (store, key file), its size, its last checkpoint and its replica's lag."""
    from .admin import status_of

    info = status_of(_admin())
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    for name, value in info.items():
        typer.echo(f"{name + ':':<18}{value if value is not None else '-'}")
