"""Shared fixtures: a fresh safe-ops workspace per test and the anyio backend."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
SEEDED_FILE = "notes.txt"
SEEDED_TEXT = "quarterly numbers, keep me\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def user_dirs(base: Path) -> dict[str, str]:
    """XDG directories of the test's own: a server installs its shipped allowlist there on
    first start and reads it, so no file left in the user's real ~/.config decides what a
    test's server publishes."""
    return {"XDG_CONFIG_HOME": str(base / "config"), "XDG_DATA_HOME": str(base / "data")}


def safe_ops_bin() -> Path:
    """The built server: `SAFE_OPS_BIN`, else the workspace's debug build."""
    path = Path(os.environ.get("SAFE_OPS_BIN", REPO / "target" / "debug" / "safe-ops"))
    if not path.is_file():
        pytest.fail(f"safe-ops binary not found at {path}: run `cargo build -p safe-ops` or set SAFE_OPS_BIN")
    return path


@dataclass
class Workspace:
    """A sandbox root with one seeded file and the path of the server's SQLite database."""

    root: Path
    db: Path

    @property
    def seeded(self) -> Path:
        return self.root / SEEDED_FILE

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=str(safe_ops_bin()),
            args=["--root", str(self.root), "--db", str(self.db)],
            env={"RUST_LOG": "warn,guard::audit=info", **user_dirs(self.db.parent)},
        )

    def tables(self) -> dict[str, int]:
        """Table name -> row count, read straight from the SQLite file; tables waiting in
        drop_table's trash are not counted, as safe-ops' own listings leave them out."""
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                    "AND name NOT LIKE 'guard-trash.%' ORDER BY name"
                )
            ]
            return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}
        finally:
            conn.close()

    def deployments(self) -> list[tuple[str, str, str]]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return list(conn.execute("SELECT service, approval_level, rollback_plan FROM deployments ORDER BY id"))
        finally:
            conn.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    (root / SEEDED_FILE).write_text(SEEDED_TEXT)
    return Workspace(root=root, db=tmp_path / "ops.db")
