"""The label store's schema, its version, and the forward migrations between versions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reljudge.errors import StoreError

if TYPE_CHECKING:
    from reljudge.store.backend import Backend

SCHEMA_VERSION = 10

# Version 1: interned queries, passages and sources; append-only label events.
V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (id INTEGER PRIMARY KEY, qid TEXT NOT NULL UNIQUE, text TEXT);
CREATE TABLE passages (id INTEGER PRIMARY KEY, docid TEXT NOT NULL UNIQUE, text TEXT,
                       text_sha TEXT);
CREATE TABLE sources (id INTEGER PRIMARY KEY, kind TEXT NOT NULL
                          CHECK (kind IN ('human', 'llm', 'import')),
                      name TEXT NOT NULL, UNIQUE (kind, name));
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    q INTEGER NOT NULL REFERENCES queries (id),
    d INTEGER NOT NULL REFERENCES passages (id),
    source INTEGER NOT NULL REFERENCES sources (id),
    sample INTEGER NOT NULL DEFAULT 0,
    grade INTEGER,
    failure TEXT,
    raw TEXT,
    probs TEXT,
    expected REAL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    cost REAL,
    latency REAL,
    created_at REAL NOT NULL,
    meta TEXT,
    CHECK ((grade IS NULL) <> (failure IS NULL))
);
CREATE INDEX events_pair ON events (q, d);
CREATE INDEX events_source ON events (source);
"""

# Version 2: imports are recorded (file digest, source, count) so that importing the same
# file twice is recognised, and each event remembers the import batch it came with.
V1_TO_V2 = """
CREATE TABLE imports (id INTEGER PRIMARY KEY, path TEXT NOT NULL, sha256 TEXT NOT NULL,
                      source INTEGER NOT NULL REFERENCES sources (id), events INTEGER NOT NULL,
                      clipped INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL);
CREATE INDEX imports_sha ON imports (sha256, source);
ALTER TABLE events ADD COLUMN batch INTEGER REFERENCES imports (id);
"""

# Version 3: samples drawn for human labelling (infer.sample) and their items, with the
# inclusion probability of each item's sampling unit (the schema agreed with `assess`).
V2_TO_V3 = """
CREATE TABLE samples (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    unit TEXT NOT NULL CHECK (unit IN ('query', 'pair')),
    design TEXT NOT NULL,
    seed INTEGER, budget INTEGER, params TEXT,
    created_at REAL NOT NULL);
CREATE TABLE sample_items (sample INTEGER NOT NULL REFERENCES samples (id),
    q INTEGER NOT NULL REFERENCES queries (id), d INTEGER NOT NULL REFERENCES passages (id),
    position INTEGER NOT NULL,
    prob REAL NOT NULL,
    stratum TEXT,
    PRIMARY KEY (sample, q, d));
"""

# Version 4: derived sources (a calibrated judge, a panel of judges) record what they were
# fitted on; their events carry the fitted grade distribution in events.probs / expected.
V3_TO_V4 = """
CREATE TABLE derivations (id INTEGER PRIMARY KEY,
                          source INTEGER NOT NULL REFERENCES sources (id),
                          method TEXT NOT NULL, fitted_on TEXT NOT NULL,
                          created_at REAL NOT NULL);
CREATE INDEX derivations_source ON derivations (source);
"""

# Version 5: a failed judgment's kind has its own column (reljudge.judge.failures), and every
# labelling job records what it spent (the spend ledger), so spend is capped across runs.
V4_TO_V5 = """
ALTER TABLE events ADD COLUMN failure_kind TEXT;
CREATE TABLE spend (id INTEGER PRIMARY KEY, source INTEGER NOT NULL REFERENCES sources (id),
                    endpoint TEXT, started_at REAL NOT NULL, updated_at REAL NOT NULL,
                    calls INTEGER NOT NULL DEFAULT 0, tokens_in INTEGER NOT NULL DEFAULT 0,
                    tokens_out INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0);
CREATE INDEX spend_source ON spend (source);
"""

# Version 6: Batch API jobs (reljudge.judge.batch). A batch row is written before its file is
# uploaded, and each provider id (input file, batch, output and error files) as soon as it is
# known, so a killed process resumes from the recorded ids and never submits a pair twice.
# ``config`` is the judge's settings (never the key); ``collected`` is set, in the same
# transaction as the batch's failure events, once its answers are in the cache and store.
V5_TO_V6 = """
CREATE TABLE batches (id INTEGER PRIMARY KEY,
                      provider_id TEXT, input_file_id TEXT, output_file_id TEXT,
                      error_file_id TEXT, endpoint TEXT NOT NULL,
                      source INTEGER NOT NULL REFERENCES sources (id),
                      status TEXT NOT NULL, total INTEGER NOT NULL DEFAULT 0,
                      completed INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
                      reserved REAL NOT NULL DEFAULT 0, config TEXT,
                      collected INTEGER NOT NULL DEFAULT 0,
                      created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX batches_source ON batches (source);
CREATE TABLE batch_items (batch INTEGER NOT NULL REFERENCES batches (id),
                          custom_id TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
                          sample INTEGER NOT NULL, PRIMARY KEY (batch, custom_id, qid, docid,
                                                               sample));
CREATE INDEX batch_items_key ON batch_items (custom_id);
"""

# Version 7: what a killed Batch API run needs to resume, and what a collect needs to rebuild a
# prompt. ``batches.intent`` names the batch's input file (``reljudge-batch-<intent>.jsonl``,
# the intent starting with the file's SHA-256) and its metadata, recorded BEFORE the upload, so
# a run killed before recording the file or batch id finds them at the provider instead of
# uploading again. ``passages.title`` keeps the title the prompt showed.
V6_TO_V7 = """
ALTER TABLE batches ADD COLUMN intent TEXT;
ALTER TABLE passages ADD COLUMN title TEXT;
"""

# Version 8: claims. A labelling process claims the items it is about to send (its owner id
# and a lease it renews while it works) so that processes sharing a store never pay twice for
# one item; a claim whose lease ran out (its process was killed) is taken over. And what each
# label rests on: ``events.shown``, the digest of the query and passage texts (and title) the
# judge or person saw, and ``text_history``, every text a query or passage had before it was
# replaced (texts are never overwritten without a trace).
V7_TO_V8 = """
ALTER TABLE events ADD COLUMN shown TEXT;
CREATE TABLE text_history (kind TEXT NOT NULL CHECK (kind IN ('query', 'passage')),
                           ref INTEGER NOT NULL, text TEXT, title TEXT,
                           replaced_at REAL NOT NULL);
CREATE INDEX text_history_ref ON text_history (kind, ref);
CREATE TABLE claims (source INTEGER NOT NULL REFERENCES sources (id),
                     q INTEGER NOT NULL REFERENCES queries (id),
                     d INTEGER NOT NULL REFERENCES passages (id),
                     sample INTEGER NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL,
                     PRIMARY KEY (source, q, d, sample));
CREATE INDEX claims_owner ON claims (owner);
"""

# Version 9: every failed judgment has its kind. Version 5 added ``failure_kind`` without
# filling it: the failures recorded before then get the kind their detail text says, read
# here once (the wording reljudge wrote them with), so that no reader ever parses failure
# text. An undo (``failure = 'retracted'``) is not a failed judgment and keeps no kind.
# ``replace(failure, 'connection', '') <> failure``: the text contains "connection", case
# sensitive on both engines (SQLite's LIKE is not).
V8_TO_V9 = """
UPDATE events SET failure_kind = CASE
    WHEN substr(failure, 1, 13) = 'gave up after'
         OR substr(failure, 1, 18) = 'malformed response'
        THEN CASE WHEN replace(failure, 'connection', '') <> failure THEN 'connection'
                  ELSE 'http_status' END
    WHEN substr(failure, 1, 7) = 'timeout' THEN 'timeout'
    WHEN substr(failure, 1, 16) = 'connection error' THEN 'connection'
    WHEN substr(failure, 1, 5) = 'HTTP ' THEN 'http_status'
    WHEN substr(failure, 1, 7) = 'refused' THEN 'refused'
    ELSE 'unparseable' END
WHERE failure IS NOT NULL AND failure_kind IS NULL AND failure <> 'retracted'
"""

# Version 10: probes of a judge's gullibility (reljudge.probe), in tables of their own that no
# reader of labels touches: each probe's text, kind, seed and the pair it was made from, the
# judges' grades of probes (and of the clean passages they came from), the claims of probing
# processes, and what probing spent. No foreign key reaches the label tables, so a probe can
# never become a query, a passage, a source or an event.
V9_TO_V10 = """
CREATE TABLE probes (id INTEGER PRIMARY KEY, docid TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
                     seed INTEGER NOT NULL, qid TEXT NOT NULL, original TEXT NOT NULL,
                     text TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE probe_events (
    id INTEGER PRIMARY KEY, judge TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
    sample INTEGER NOT NULL DEFAULT 0, grade INTEGER, failure TEXT, failure_kind TEXT,
    raw TEXT, tokens_in INTEGER, tokens_out INTEGER, cost REAL, latency REAL, shown TEXT,
    meta TEXT, created_at REAL NOT NULL,
    CHECK ((grade IS NULL) <> (failure IS NULL))
);
CREATE INDEX probe_events_judge ON probe_events (judge);
CREATE TABLE probe_claims (judge TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
                           sample INTEGER NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL,
                           PRIMARY KEY (judge, qid, docid, sample));
CREATE INDEX probe_claims_owner ON probe_claims (owner);
CREATE TABLE probe_spend (id INTEGER PRIMARY KEY, judge TEXT NOT NULL, endpoint TEXT,
                          started_at REAL NOT NULL, updated_at REAL NOT NULL,
                          calls INTEGER NOT NULL DEFAULT 0, tokens_in INTEGER NOT NULL DEFAULT 0,
                          tokens_out INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0)
"""

MIGRATIONS = {1: V1_TO_V2, 2: V2_TO_V3, 3: V3_TO_V4, 4: V4_TO_V5, 5: V5_TO_V6,
              # from version -> the next
              6: V6_TO_V7, 7: V7_TO_V8, 8: V8_TO_V9, 9: V9_TO_V10}


def migrate(db: Backend) -> int:
    """Create or upgrade the schema to SCHEMA_VERSION in one transaction of ``db`` (its
    ``version()``, ``run_ddl(script)`` and ``lock(name)`` speak its dialect); returns the old
    version."""
    old = db.version()
    if old > SCHEMA_VERSION:
        raise StoreError(f"the store has schema version {old}, newer than this reljudge "
                         f"understands ({SCHEMA_VERSION}); upgrade reljudge")
    if old == SCHEMA_VERSION:
        return old
    with db.transaction() as conn:
        # one migrating process at a time
        db.lock("migrate")
        # another process may have migrated meanwhile
        version = db.version()
        if version == 0:
            db.run_ddl(V1)
            conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
            version = 1
        while version < SCHEMA_VERSION:
            db.run_ddl(MIGRATIONS[version])
            version += 1
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    return old
