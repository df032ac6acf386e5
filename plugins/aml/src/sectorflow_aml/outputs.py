"""What the ``sectorflow aml`` commands may write to: ``--out`` folders (``aml train``) and ``--out`` files
(``aml dispositions export``), checked before any work, never overwriting without ``--force``.

Found by fresh-user tests: ``aml train --out plugins/aml/src/sectorflow_aml/bundle`` replaced the shipped model
without a word; ``aml train --out FOLDER --force`` on a folder holding other files was refused only after the
training (minutes); ``aml dispositions export --out FILE`` overwrote any file, the labels file it was meant to
refresh included (with a mistyped ``--tenant``, by a header-only file, exit 0).
"""

from __future__ import annotations

from pathlib import Path

from sectorflow import ConfigError, writable_file

from .account_scorer import ACCOUNT_CONFIG

SHIPPED_BUNDLE = Path(__file__).resolve().parent / "bundle"
"""The plugin's shipped bundle folder (``plugin.BUNDLE_DIR``): ``aml train`` never writes there."""


def check_out_folder(out: str | Path, force: bool = False) -> Path:
    """Refuse an ``--out`` bundle folder that would overwrite something: the plugin's shipped bundle folder
    (:data:`SHIPPED_BUNDLE`, or a folder inside it) always; an existing folder that holds files unless ``force``, and
    with ``force`` one that holds no account model bundle (no ``account_model.json``: ``--force`` replaces a bundle,
    never other files); a file.

    Raises:
        ConfigError: what to give instead (a new or empty folder, ``--force``).
    """
    out = Path(out)
    target = out.resolve()
    shipped = SHIPPED_BUNDLE
    if target == shipped or shipped in target.parents:
        raise ConfigError(f"--out {out} is the bundle shipped with sectorflow-aml ({shipped}); it is never "
                          "overwritten, not even with --force: pick another folder (e.g. --out my-bundle) and run "
                          "with --task-path my-bundle.", details={"out": str(out), "shipped": str(shipped)})
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file: give a new or empty folder.", details={"out": str(out)})
    held = sorted(out.iterdir()) if out.is_dir() else []
    if held and not force:
        raise ConfigError(f"--out {out} already holds {len(held)} file(s) or folder(s) (e.g. {held[0].name}): give a "
                          "new or empty folder, or add --force to replace the bundle in it.",
                          details={"out": str(out), "entries": len(held)})
    if held and not (out / ACCOUNT_CONFIG).is_file():
        # checked here, before the training: the bundle writer refuses it too, but only once the model is trained
        raise ConfigError(f"--out {out} holds {len(held)} file(s) or folder(s) (e.g. {held[0].name}) and no account "
                          f"model bundle (no {ACCOUNT_CONFIG}): --force replaces a bundle, never other files. Give a "
                          "new or empty folder.", details={"out": str(out), "entries": len(held)})
    return out


def check_out_file(out: str | Path, force: bool = False, *, what: str = "output file",
                   option: str = "--out") -> Path:
    """Refuse an ``--out`` file that exists unless ``force`` (and a folder, or a path that cannot be written:
    :func:`sectorflow.writable_file`), before anything is read.

    Raises:
        ConfigError: the file exists (naming its size, and ``--force``).
        PathNotWritableError: a folder, or a path this user cannot write.
    """
    out = Path(out).expanduser()
    if out.is_file() and not force:
        raise ConfigError(f"{option} {out} already exists ({out.stat().st_size:,} bytes): give a new file name, or add "
                          "--force to replace it.", details={"out": str(out)})
    return writable_file(out, what=what, setting=option)
