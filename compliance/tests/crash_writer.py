"""Child process of test_crash.py: append records forever, printing each sequence number once its append returned
(that is, once it is acknowledged). Usage: crash_writer.py STORE_URL PG_SCHEMA KEY_FILE [alternate]

``alternate``: every other record is appended with ``durable=False`` (committed, its fsync left to the next record's
commit: an unregulated call's ``call_started``), as the audit plugin writes a call's two records."""

from __future__ import annotations

import sys

from sectorflow.compliance import AuditConfig, AuditLog, load_key_file, open_store
from sectorflow.compliance.records import make_object


def main() -> None:
    url, schema, key = sys.argv[1:4]
    alternate = sys.argv[4:5] == ["alternate"]
    lg = AuditLog(open_store(url, pg_schema=schema), load_key_file(key),
                  AuditConfig(checkpoint_every=16, pg_schema=schema))
    i = 0
    while True:
        seq = lg.append("test.crash", actor="writer", obj=make_object(task="crash"), n_items=1,
                        inputs=[{"i": i}], details={"i": i}, durable=not (alternate and i % 2 == 0))
        sys.stdout.write(f"{seq}\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main()
