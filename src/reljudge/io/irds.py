"""ir_datasets as an input: ``irds:DATASET_ID`` wherever a queries, passages or qrels file goes.

Read through ir_datasets' own API: queries with ``queries_iter``, qrels with ``qrels_iter``,
and passages with ``docs_store().get_many(ids)`` for the ids a command needs only, so a corpus
is never read into memory whole. ir_datasets is an optional extra: ``pip install
'reljudge[irds]'``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard

from reljudge.errors import ConfigError, InputError

if TYPE_CHECKING:
    from reljudge.trec_data import Qrels

PREFIX = "irds:"
INSTALL = "pip install 'reljudge[irds]'"


def is_irds(path: object) -> TypeGuard[str]:
    """True for an ``irds:DATASET_ID`` input name."""
    return isinstance(path, str) and path.startswith(PREFIX)


def dataset_id(spec: object) -> str:
    """The DATASET_ID of an ``irds:DATASET_ID`` input name, as written (not stripped)."""
    return str(spec)[len(PREFIX):]


def load(spec: str) -> Any:
    """The ir_datasets dataset named by ``irds:DATASET_ID``."""
    name = dataset_id(spec).strip()
    if not name:
        raise InputError("expected irds:DATASET_ID, e.g. irds:msmarco-passage/trec-dl-2019/"
                         "judged", spec)
    try:
        import ir_datasets
    except ImportError:
        raise ConfigError(f"{spec}: reading ir_datasets needs the 'irds' extra: "
                          f"{INSTALL}") from None
    try:
        return ir_datasets.load(name)
    except KeyError:
        raise InputError(f"no ir_datasets dataset {name!r} (see ir_datasets' catalogue "
                         "at https://ir-datasets.com)", spec) from None


@contextmanager
def fetching(spec: str, what: str) -> Iterator[None]:
    """Turn ir_datasets' failure to provide a dataset's ``what`` (offline, a download that
    failed, a file it cannot read: ``RuntimeError: All download sources failed`` and the like)
    into one InputError naming the dataset and what ir_datasets needs."""
    try:
        yield
    except (InputError, ConfigError):
        raise
    except Exception as e:  # noqa: BLE001 - any failure inside ir_datasets is reported alike
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"ir_datasets could not provide the {what} of {dataset_id(spec).strip()!r} "
            f"({reason}); it downloads a dataset's files on first use into ~/.ir_datasets "
            f"(or $IR_DATASETS_HOME): run once where the network is reachable, or put the "
            f"files there", spec) from None


def need(dataset: Any, spec: str, what: str) -> None:
    """Refuse a dataset without ``what`` (queries, docs or qrels)."""
    if not getattr(dataset, f"has_{what}")():
        raise InputError(f"this ir_datasets dataset has no {what}", spec)


def _text(record: Any, field: str = "text") -> str:
    """A record's text field, else ir_datasets' default text of it."""
    value = getattr(record, field, None)
    if isinstance(value, str):
        return value
    return record.default_text()


def read_queries(spec: str) -> dict[str, str]:
    """{qid: text} of the dataset's queries (``queries_iter``)."""
    dataset = load(spec)
    need(dataset, spec, "queries")
    out: dict[str, str] = {}
    with fetching(spec, "queries"):
        for q in dataset.queries_iter():
            if q.query_id in out:
                raise InputError(f"duplicate query id {q.query_id!r}", spec)
            out[q.query_id] = _text(q)
    if not out:
        raise InputError("the dataset has no queries", spec)
    return out


def read_passages(spec: str, ids: Collection[str] | None) -> dict[str, dict[str, str]]:
    """{docid: {"text", "title"?}} of these ids only, from the dataset's docs_store."""
    if ids is None:
        raise InputError("passages from ir_datasets are looked up by id, and this command "
                         "did not say which ones it needs (it would read the whole corpus)",
                         spec)
    dataset = load(spec)
    need(dataset, spec, "docs")
    with fetching(spec, "passages"):
        found = dataset.docs_store().get_many(sorted(set(ids)))
    out: dict[str, dict[str, str]] = {}
    for docid, doc in found.items():
        rec = {"text": _text(doc)}
        title = getattr(doc, "title", None)
        if isinstance(title, str) and title.strip():
            rec["title"] = title
        out[docid] = rec
    return out


def qrels_columns(spec: str) -> tuple[list[str], list[str], list[int]]:
    """(qids, docids, grades) of the dataset's qrels (``qrels_iter``)."""
    dataset = load(spec)
    need(dataset, spec, "qrels")
    q, d, g = [], [], []
    with fetching(spec, "qrels"):
        for r in dataset.qrels_iter():
            q.append(r.query_id)
            d.append(r.doc_id)
            g.append(int(r.relevance))
    if not q:
        raise InputError("the dataset has no qrels", spec)
    return q, d, g


def read_qrels(spec: str) -> Qrels:
    """The dataset's qrels as a ``Qrels`` (a repeated pair is an error, as in a file)."""
    from reljudge.trec_data import Qrels

    q, d, g = qrels_columns(spec)
    try:
        return Qrels.from_arrays(q, d, g)
    except InputError as e:
        raise InputError(e.detail, spec) from None
