"""The texts of a label store: query and passage texts (and titles) by id."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reljudge.errors import StoreError
from reljudge.labels import passage_parts, shown_digest
from reljudge.store.part import StorePart


class Texts(StorePart):
    """Query and passage texts of a store (a part of ``LabelStore``)."""

    def add_queries(self, queries: Mapping[str, str]) -> None:
        """Insert or update query texts; a text replaced goes to the text history first."""
        with self.db.transaction():
            self._keep_history("query", "queries", "qid", "NULL",
                               {q: (t, None) for q, t in queries.items()})
            self.conn.executemany(
                "INSERT INTO queries (qid, text) VALUES (?, ?) "
                "ON CONFLICT (qid) DO UPDATE SET text = excluded.text", queries.items())

    def add_passages(self, passages: Mapping[str, str | Mapping[str, str]]) -> None:
        """Insert or update passage texts (a text, or a {"text": ..., "title"?: ...} record)."""
        rows = []
        for docid, p in passages.items():
            text, title = passage_parts(p)
            # a None among the passages of an untyped caller
            if text is None:
                raise StoreError(f"passage {docid!r}: expected a text or a record, found None")
            rows.append((docid, text, hashlib.sha256(text.encode()).hexdigest()[:16], title))
        with self.db.transaction():
            self._keep_history("passage", "passages", "docid", "title",
                               {d: (text, title) for d, text, _, title in rows})
            self.conn.executemany(
                "INSERT INTO passages (docid, text, text_sha, title) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (docid) DO UPDATE SET text = excluded.text, "
                "text_sha = excluded.text_sha, title = excluded.title", rows)

    def _keep_history(self, kind: str, table: str, column: str, title: str,
                      new: Mapping[str, tuple[str, str | None]]) -> None:
        """Before texts are replaced: each stored text (and title) that differs from its new
        one goes to ``text_history``, so that no text is lost (call inside a transaction)."""
        now = time.time()
        old = self.db.select_in(f"SELECT id, {column}, text, {title} FROM {table}", column,
                                list(new))
        self.conn.executemany(
            "INSERT INTO text_history (kind, ref, text, title, replaced_at) VALUES (?,?,?,?,?)",
            [(kind, ref, text, head, now) for ref, key, text, head in old
             if text is not None and (text, head or None) != (new[key][0], new[key][1] or None)])

    def text_history(self, kind: str, key: str) -> list[tuple[str | None, str | None, float]]:
        """(text, title, replaced at) of every earlier text of a query or passage, oldest
        first."""
        table, column = ("queries", "qid") if kind == "query" else ("passages", "docid")
        return self.conn.execute(
            f"SELECT h.text, h.title, h.replaced_at FROM text_history h JOIN {table} t ON "
            f"t.id = h.ref WHERE h.kind = ? AND t.{column} = ? ORDER BY h.rowid",
            (kind, key)).fetchall()

    def shown_now(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """{(qid, docid): the digest of the texts the store holds now} (``labels.shown_digest``)
        of those of these pairs whose query and passage texts it holds."""
        pairs = list(pairs)
        # no passage text at all: nothing to look up
        if not pairs or self.conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM passages WHERE text IS NOT NULL)").fetchone()[0]:
            return {}
        queries = {q: t for q, t in self.db.select_in("SELECT qid, text FROM queries", "qid",
                                                       sorted({q for q, _ in pairs}))
                   if t is not None}
        passages = {d: (t, h) for d, t, h in self.db.select_in(
            "SELECT docid, text, title FROM passages", "docid", sorted({d for _, d in pairs}))
            if t is not None}
        return {(q, d): shown_digest(queries[q], *passages[d]) for q, d in pairs
                if q in queries and d in passages}

    def queries(self) -> dict[str, str | None]:
        """{qid: text or None} of every query the store knows."""
        return dict(self.conn.execute("SELECT qid, text FROM queries"))

    def query_texts(self, qids: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
        """{qid: (text, narrative)} of the given queries the store knows (narrative is None
        unless the store's queries table has a narrative column)."""
        narrative = "narrative" if "narrative" in self.db.columns("queries") else "NULL"
        return {r[0]: (r[1], r[2]) for r in self.db.select_in(
            f"SELECT qid, text, {narrative} FROM queries", "qid", list(qids))}

    def passage_texts(self, docids: Iterable[str]) -> dict[str, str]:
        """{docid: text} of the given passages whose text the store holds."""
        return {r[0]: r[1] for r in self.db.select_in(
            "SELECT docid, text FROM passages", "docid", list(docids)) if r[1] is not None}

    def passage_titles(self, docids: Iterable[str]) -> dict[str, str]:
        """{docid: title} of the given passages that have a title in the store."""
        return {r[0]: r[1] for r in self.db.select_in(
            "SELECT docid, title FROM passages", "docid", list(docids)) if r[1]}

    def passages_with_text(self) -> set[str]:
        """Docids whose text the store holds."""
        return {r[0] for r in self.conn.execute(
            "SELECT docid FROM passages WHERE text IS NOT NULL")}

    def texts(self, pairs: Sequence[tuple[str, str]], *, titles: bool = False
              ) -> tuple[dict[str, str | None], dict[str, Any]]:
        """Query and passage texts the store holds for these pairs: ({qid: text}, {docid: text});
        with ``titles``, a passage with a title is a {"text": ..., "title": ...} record, as the
        labeller takes it."""
        qs = {q for q, _ in pairs}
        ds = {d for _, d in pairs}
        queries = {q: t for q, t in self.conn.execute("SELECT qid, text FROM queries")
                   if q in qs}
        passages = {d: ({"text": t, "title": title} if titles and title and t is not None
                        else t)
                    for d, t, title in self.conn.execute("SELECT docid, text, title FROM passages")
                    if d in ds}
        return queries, passages
