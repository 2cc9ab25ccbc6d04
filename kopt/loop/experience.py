"""The experience log: a SQLite store of what was tried and how it ended, across targets and runs.

Every comparison appends one entry (kernel type, backend, chip, bottleneck, strategy, hypothesis,
outcome, change %). ``recommend`` ranks strategies for a kernel type, backend, chip and
bottleneck by past success, with the counts behind the rank; the strategies table
(kopt/analysis/data/strategies.yaml) is loaded as priors, so a new store recommends on day one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

FIELDS = (
    "kernel_type",
    "backend",
    "chip",
    "bottleneck",
    "strategy",
    "hypothesis",
    "outcome",
    "reason",
    "change_pct",
    "version",
    "workspace",
    "source",
)
ENTERED = FIELDS[:9]  # what a person enters by hand (`kopt experience add`); the rest the graph fills
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
  id INTEGER PRIMARY KEY,
  key TEXT UNIQUE NOT NULL,
  created TEXT NOT NULL,
  {", ".join(f"{f} {'REAL' if f == 'change_pct' else 'TEXT'}" for f in FIELDS)}
);
"""
PRIOR = "prior"


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kopt" / "experience.sqlite"


def _key(e: dict) -> str:
    parts = [str(e.get(f) if f != "change_pct" or e.get(f) is None else round(float(e[f]), 3)) for f in FIELDS]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class Store:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.executescript(SCHEMA)
        if not self.db.execute("SELECT 1 FROM entries WHERE source = ? LIMIT 1", (PRIOR,)).fetchone():
            self._load_priors()

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _load_priors(self) -> None:
        from kopt.analysis.bottleneck import strategies

        for bottleneck, by_backend in strategies().items():
            for backend, items in (by_backend or {}).items():
                for s in items or []:
                    self.add(
                        {
                            "kernel_type": "*",
                            "backend": backend,
                            "chip": "*",
                            "bottleneck": bottleneck,
                            "strategy": s["id"],
                            "hypothesis": s["idea"],
                            "outcome": PRIOR,
                            "source": PRIOR,
                        }
                    )

    def add(self, entry: dict) -> bool:
        """Add one entry; False when an identical one is already there."""
        e = {f: entry.get(f) for f in FIELDS}
        e["source"] = e["source"] or "manual"
        created = entry.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds")
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO entries (key, created, {', '.join(FIELDS)}) VALUES (?, ?, {', '.join('?' * len(FIELDS))})",
            (_key(e), created, *[e[f] for f in FIELDS]),
        )
        self.db.commit()
        return cur.rowcount == 1

    def list(self, limit: int | None = None, include_priors: bool = False) -> list[dict]:
        q = "SELECT * FROM entries" + ("" if include_priors else " WHERE source != 'prior'") + " ORDER BY id"
        rows = [dict(r) for r in self.db.execute(q)]
        return rows[-limit:] if limit else rows

    def search(self, text: str) -> list[dict]:
        like = f"%{text}%"
        cols = ("kernel_type", "chip", "bottleneck", "strategy", "hypothesis", "outcome", "reason", "version")
        q = (
            "SELECT * FROM entries WHERE source != 'prior' AND ("
            + " OR ".join(f"{c} LIKE ?" for c in cols)
            + ") ORDER BY id"
        )
        return [dict(r) for r in self.db.execute(q, [like] * len(cols))]

    def merge(self, other: str | Path) -> int:
        """Add every entry of another store that this one lacks; returns how many were added."""
        if Path(other).resolve() == self.path.resolve():
            raise ValueError(f"{other}: cannot merge a store into itself")
        if not Path(other).is_file():
            raise FileNotFoundError(f"{other}: no such experience store")
        src = sqlite3.connect(other)
        src.row_factory = sqlite3.Row
        added = 0
        for r in src.execute("SELECT * FROM entries"):
            d = dict(r)
            if self.add(d):
                added += 1
        src.close()
        return added

    def stats(self) -> dict:
        rows = self.list()
        by_outcome: dict[str, int] = {}
        for r in rows:
            by_outcome[r["outcome"]] = by_outcome.get(r["outcome"], 0) + 1
        return {
            "entries": len(rows),
            "priors": self.db.execute("SELECT COUNT(*) FROM entries WHERE source = 'prior'").fetchone()[0],
            "by_outcome": by_outcome,
            "kernel_types": sorted({r["kernel_type"] for r in rows}),
            "chips": sorted({r["chip"] for r in rows}),
        }

    def recommend(self, kernel_type: str, backend: str, chip: str, bottleneck: str, n: int = 5) -> list[dict]:
        """Strategies for this bottleneck and backend, ranked by past success.

        Score: (keeps + 1) / (tries + 2) over the entries for this kernel type and chip when there
        are any, else over every entry with this bottleneck and backend; strategies never tried
        score 0.5 and keep the strategies table's order (its priors)."""
        priors = [
            dict(r)
            for r in self.db.execute(
                "SELECT * FROM entries WHERE source = 'prior' AND backend = ? AND bottleneck = ? ORDER BY id",
                (backend, bottleneck),
            )
        ]
        tried = [
            dict(r)
            for r in self.db.execute(
                "SELECT * FROM entries WHERE source != 'prior' AND backend = ? AND bottleneck = ? AND strategy IS NOT NULL"
                " AND chip != 'cpu'",  # CPU-interpreter outcomes (older stores) are not evidence
                (backend, bottleneck),
            )
        ]
        order = [p["strategy"] for p in priors] + sorted(
            {t["strategy"] for t in tried} - {p["strategy"] for p in priors}
        )
        ideas = {p["strategy"]: p["hypothesis"] for p in priors}
        out = []
        for i, s in enumerate(order):
            mine = [t for t in tried if t["strategy"] == s]
            here = [t for t in mine if t["kernel_type"] == kernel_type and t["chip"] == chip]
            basis = here or mine
            keeps = sum(1 for t in basis if t["outcome"] == "keep")
            score = (keeps + 1) / (len(basis) + 2)
            out.append(
                {
                    "strategy": s,
                    "idea": ideas.get(s) or (mine[0]["hypothesis"] if mine else ""),
                    "score": score,
                    "keeps": keeps,
                    "tries": len(basis),
                    "basis": "this kernel type and chip" if here else ("every target" if mine else "prior only"),
                    "keeps_everywhere": sum(1 for t in mine if t["outcome"] == "keep"),
                    "tries_everywhere": len(mine),
                    "_order": i,
                }
            )
        out.sort(key=lambda r: (-r["score"], r["_order"]))
        for r in out:
            r.pop("_order")
        return out[:n]


def entry_from_comparison(
    comp: dict, *, kernel_type: str, chip: str, parent: str | None, strategy: str | None, workspace: str
) -> dict:
    """One comparison's entry; its bottleneck, the ``parent``'s, is filled in by ``build`` (the
    parent's profile may follow this decision)."""
    per = [
        r.get("gpu_delta_pct") if r.get("gpu_delta_pct") is not None else r.get("delta_pct")
        for r in comp.get("per_class", [])
    ]
    per = [p for p in per if p is not None]
    change = (sum(per) / len(per)) if per else None
    return {
        "kernel_type": kernel_type,
        "backend": "triton",
        "chip": chip,
        "bottleneck": None,
        "parent": parent,
        "strategy": strategy,
        "hypothesis": comp.get("hypothesis") or "",
        # a keep the judge did not measure itself (kopt.loop.decide: by hand, a command's own CSV, a
        # fixed seed) is no evidence that the strategy works: tried, not kept
        "outcome": "untrusted-keep" if comp["decision"] == "keep" and comp.get("untrusted") else comp["decision"],
        "reason": comp.get("reason"),
        "change_pct": change,
        "version": comp["version"],
        "workspace": workspace,
        "source": "comparison",
    }


def dumps(rows: list[dict]) -> str:
    return json.dumps(rows, indent=1, default=str)


def build(out: str | Path, compares: list[str], imported: str | None = None) -> dict:
    """The project's store (rule `experience`): the priors, one entry per comparison that gave
    one (its bottleneck its parent's: ``parent_bottleneck``), and, when asked, every entry of
    another store (read, never written)."""
    Path(out).unlink(missing_ok=True)
    added = skipped = 0
    with Store(out) as st:
        for path in compares:
            comp = json.loads(Path(path).read_text())
            entry = (comp.get("experience") or {}).get("entry")
            if entry is None:
                skipped += 1
                continue
            results = Path(path).parent.parent
            bottleneck = entry.get("bottleneck") or parent_bottleneck(results, entry.get("parent"), comp)
            added += st.add(
                {**entry, "bottleneck": bottleneck, "created": (comp.get("provenance") or {}).get("created")}
            )
        merged = st.merge(imported) if imported else 0
    return {"store": str(out), "comparisons": added, "without_entry": skipped, "imported": merged}


def parent_bottleneck(results: Path, parent: str | None, comp: dict) -> str:
    """The bottleneck a version set out from: the commonest of its parent's, over the classes the
    version targets (all where it names none of them); "unknown" without a parent's profile."""
    path = results / parent / "bottleneck.json" if parent else None
    if path is None or not path.is_file():
        return "unknown"
    classes = json.loads(path.read_text()).get("classes", [])
    targets = comp.get("target_classes")
    pick = [c for c in classes if targets == "all" or c["class"] in (targets or [])] or classes
    names = [c["bottleneck"] for c in pick]
    return max(set(names), key=names.count) if names else "unknown"
