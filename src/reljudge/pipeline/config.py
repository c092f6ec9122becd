"""The pipeline's config file (TOML), validated once at the edge.

Relative paths in the file are resolved against the file's own folder, so a pipeline folder
can be moved or run from anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    ValidationError,
    field_validator,
)

from reljudge.errors import ConfigError
from reljudge.judge.config import EndpointConfig, JudgeConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


# Strict: `depth = "10"` is an error, not coerced. Paths are the one exception: TOML has no
# path type, so they are strings made paths.
FilePath = Annotated[Path, Strict(False)]


def _file_or_dataset(value: object) -> Path | str:
    """``irds:DATASET_ID`` kept as that name (read through ir_datasets); any other text a
    path."""
    from reljudge.io import irds

    if irds.is_irds(value):
        if not irds.dataset_id(value).strip():
            raise ValueError("expected irds:DATASET_ID, e.g. irds:msmarco-passage/trec-dl-2019/"
                             "judged")
        return value
    return _path(value, "irds:DATASET_ID")


def _path(value: object, other: str) -> Path:
    """A path given as text (TOML has no path type), or an error naming the other form."""
    if isinstance(value, Path):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a file path or {other}, found {value!r}")
    return Path(value)


#: a queries, passages or qrels input: a file, or an ir_datasets dataset as irds:DATASET_ID
FileOrDataset = Annotated[Path | str, PlainValidator(_file_or_dataset)]


def _file_or_url(value: object) -> Path | str:
    """A label store: a PostgreSQL URL kept as it is, any other text a SQLite file's path."""
    from reljudge.store.postgres import is_url

    if is_url(value):
        return value
    return _path(value, "a postgresql:// URL")


#: the label store: a SQLite file, or postgresql://USER@HOST:PORT/DB?schema=NAME
FileOrStoreURL = Annotated[Path | str, PlainValidator(_file_or_url)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Inputs(_Section):
    """What the pipeline reads; queries, passages and human qrels may be ``irds:DATASET_ID``
    (passages then come from the dataset's docs_store, for the pooled ids only)."""

    queries: FileOrDataset
    passages: FileOrDataset
    runs: list[FilePath] = Field(min_length=1)
    human_qrels: FileOrDataset | None = None
    human_source: str = "human"


class PoolSection(_Section):
    """Which pairs get labelled: the top ``depth`` of every run."""

    depth: int = Field(default=10, ge=1)


#: JudgeConfig fields a pipeline file does not hold: the key stays out of files (flag or
#: OPENAI_API_KEY), the cache folder is [output] cache_dir
JUDGE_NOT_IN_FILE = ("api_key", "cache_dir")


class JudgeSettings(_Section):
    """The [judge] settings pipeline code reads by name, typed as JudgeConfig types them (the
    generated JudgeSection, a subclass, declares each of them again from JudgeConfig)."""

    enabled: bool = Field(default=True, description="label with the LLM at all")
    model: str | None = None
    base_url: str | None = None
    endpoints: list[EndpointConfig] = Field(default_factory=list)
    aggregate: str = "majority"
    price_in: float | None = None
    price_out: float | None = None


def _judge_section() -> type[JudgeSettings]:
    """The [judge] section, generated from JudgeConfig: every judge setting but the key and
    the cache folder, the model optional (flag or OPENAI_MODEL), plus ``enabled``."""
    from pydantic import create_model
    from pydantic.fields import FieldInfo

    fields: dict = {}
    for name, info in JudgeConfig.model_fields.items():
        if name in JUDGE_NOT_IN_FILE:
            continue
        if name == "model":
            fields[name] = (str | None, Field(None, description=info.description))
        else:
            fields[name] = (info.annotation, FieldInfo.merge_field_infos(info))
    return create_model("JudgeSection", __base__=JudgeSettings, __module__=__name__,
                        __doc__="The LLM judge (generated from JudgeConfig). Endpoint and key "
                                "come from here, flags or OPENAI_* variables.", **fields)


# the generated class is a JudgeSettings: checked code sees those fields
if TYPE_CHECKING:
    JudgeSection = JudgeSettings
else:
    JudgeSection = _judge_section()


class MergeSection(_Section):
    """How labels become the qrels the runs are scored with."""

    policy: str = "human-first"
    aggregate: str = "majority"


class EvalSection(_Section):
    """Measures reported for every run."""

    measures: list[str] = Field(default_factory=lambda: ["nDCG@10", "P@5", "RR", "Judged@10"])
    all_queries: bool = False


class AuditSection(_Section):
    """The judge-versus-human audit (needs human labels)."""

    measure: str = "nDCG@10"
    bootstrap: int = Field(default=1000, ge=0)
    seed: int = 0


class OutputSection(_Section):
    """Where artefacts go; the store defaults to ``labels.sqlite`` in that folder."""

    dir: FilePath = Path("out")
    store: FileOrStoreURL | None = None
    cache_dir: FilePath | None = None


class PipelineConfig(_Section):
    """A whole pipeline: inputs, pool, judge, merge, eval, audit, output."""

    inputs: Inputs
    pool: PoolSection = PoolSection()
    judge: JudgeSection = JudgeSection()
    merge: MergeSection = MergeSection()
    eval: EvalSection = EvalSection()
    audit: AuditSection = AuditSection()
    output: OutputSection = OutputSection()
    base: FilePath = Field(Path("."), exclude=True)

    @field_validator("base")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return v.resolve()

    @overload
    def path(self, p: Path) -> Path: ...
    @overload
    def path(self, p: Path | str) -> Path | str: ...
    @overload
    def path(self, p: Path | str | None) -> Path | str | None: ...

    def path(self, p: Path | str | None) -> Path | str | None:
        """A config path resolved against the config file's folder (an ``irds:`` name as
        it is)."""
        if p is None or isinstance(p, str):
            return p
        return p if p.is_absolute() else (self.base / p)

    @property
    def out_dir(self) -> Path:
        """The output folder (absolute)."""
        return self.path(self.output.dir)

    @property
    def store_path(self) -> Path | str:
        """The label store file (absolute), or its PostgreSQL URL."""
        return self.path(self.output.store) or self.out_dir / "labels.sqlite"


def load_config(path: str | Path) -> PipelineConfig:
    """Read and validate a pipeline TOML file; errors name the file and the bad setting."""
    from reljudge.io.files import read_text

    path = Path(path)
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    try:
        config = PipelineConfig.model_validate({**data, "base": path.parent})
    except ValidationError as e:
        problems = "; ".join(
            f"[{'.'.join(str(x) for x in err['loc'])}] {err['msg']}" for err in e.errors())
        raise ConfigError(f"{path}: {problems}") from None
    inputs = [config.inputs.queries, config.inputs.passages, *config.inputs.runs,
              config.inputs.human_qrels]
    missing = [str(p) for p in inputs if isinstance(p, Path) and not config.path(p).is_file()]
    if missing:
        raise ConfigError(f"{path}: input file(s) not found (or not files): "
                          f"{', '.join(missing)}")
    _check_datasets(config, path)
    _check_settings(config, path)
    _check_apart(config, path, [config.path(p) for p in inputs if isinstance(p, Path)])
    return config


#: the files a run writes in its output folder, besides the default store
WRITTEN = ("config.toml", "manifest.json", "pool.tsv", "qrels.txt", "qrels.provenance.jsonl",
           "scores.tsv", "scores.json", "audit.json", "audit.md")


def _check_apart(config: PipelineConfig, path: Path, inputs: list[Path]) -> None:
    """Refuse a store or an input that is a file the run writes, and a store that is an
    input: the same file by device and inode, whatever the spelling."""
    from reljudge.io.files import file_identity

    written = {file_identity(config.out_dir / name): name for name in WRITTEN}
    store = config.store_path if isinstance(config.store_path, Path) else None
    for what, file in [*([("[output] store", store)] if store else []),
                       *[("input", p) for p in inputs]]:
        if file_identity(file) in written:
            raise ConfigError(f"{path}: {what} {file} is the run's own "
                              f"{written[file_identity(file)]} in [output] dir: the run would "
                              "replace it; nothing was written")
    if store is not None and file_identity(store) in {file_identity(p) for p in inputs}:
        raise ConfigError(f"{path}: [output] store {store} is also an input of the run: "
                          "writing labels to it would destroy it; nothing was written")


def _check_datasets(config: PipelineConfig, path: Path) -> None:
    """Every ``irds:`` input names a dataset ir_datasets knows, with what it is read for (a
    registry lookup: nothing is downloaded here)."""
    from reljudge.errors import ReljudgeError
    from reljudge.io import irds

    inp = config.inputs
    for key, spec, part in (("queries", inp.queries, "queries"), ("passages", inp.passages,
                            "docs"), ("human_qrels", inp.human_qrels, "qrels")):
        # not an irds: input but a file (a Path)
        if not isinstance(spec, str) or not irds.is_irds(spec):
            continue
        try:
            dataset = irds.load(spec)
            irds.need(dataset, spec, part)
        except ReljudgeError as e:
            raise ConfigError(f"{path}: [inputs] {key}: {e}") from None


def _check_settings(config: PipelineConfig, path: Path) -> None:
    """Everything a stage would reject later, rejected up front, before any stage writes."""
    from reljudge.errors import ReljudgeError
    from reljudge.grades import AGGREGATES
    from reljudge.metrics import parse_measure
    from reljudge.metrics.evaluate import check_distinct
    from reljudge.store.merge import check_policy

    try:
        check_distinct([str(parse_measure(m)) for m in config.eval.measures])
        parse_measure(config.audit.measure)
        check_policy(config.merge.policy)
    except ReljudgeError as e:
        raise ConfigError(f"{path}: {e}") from None
    for section, value in (("merge", config.merge.aggregate), ("judge", config.judge.aggregate)):
        if value not in AGGREGATES:
            raise ConfigError(f"{path}: [{section}] aggregate {value!r} unknown; expected one "
                              f"of {', '.join(AGGREGATES)}")
    if any(e.api_key is not None for e in config.judge.endpoints):
        raise ConfigError(f"{path}: [judge] endpoints: a key does not belong in the file: name "
                          "the environment variable that holds it (api_key_env = \"VAR\")")
    if isinstance(config.store_path, Path) and config.store_path.is_dir():
        raise ConfigError(f"{path}: [output] store {str(config.output.store)!r} is a directory")
    # the run makes out_dir; a store elsewhere needs its folder to exist
    if isinstance(config.store_path, Path) and config.store_path.parent != config.out_dir \
            and not config.store_path.parent.is_dir():
        raise ConfigError(f"{path}: [output] store {str(config.output.store)!r} is in a "
                          f"folder that does not exist ({config.store_path.parent}); create "
                          "it first")
    if config.out_dir.exists() and not config.out_dir.is_dir():
        raise ConfigError(f"{path}: [output] dir {str(config.output.dir)!r} is not a folder")


def judge_config(config: PipelineConfig, *, model: str | None = None,
                 base_url: str | None = None, api_key: str | None = None
                 ) -> JudgeConfig | None:
    """The JudgeConfig of a pipeline (flags > config file > OPENAI_* variables), or None when
    labelling is disabled or nothing names an endpoint (an OPENAI_API_KEY alone names none).
    An endpoint named without a model, or a model without an endpoint, is a ConfigError: a
    half-configured judge never skips labelling silently."""
    from reljudge.errors import ConfigError
    from reljudge.judge.config import endpoint_from_env

    j = config.judge
    if not j.enabled:
        return None
    env = endpoint_from_env()
    named = bool(model or base_url or api_key or j.model or j.base_url or j.endpoints
                 or env.get("model") or env.get("base_url"))
    model = model or j.model or env.get("model")
    # --base-url overrides the file's endpoints
    endpoints = [] if base_url else j.endpoints
    # neither: OPENAI_BASE_URL, read when the endpoint is resolved
    base_url = base_url or j.base_url
    if not named:
        return None
    if not model:
        where = (base_url or ", ".join(e.url for e in endpoints) or env.get("base_url")
                 or "OpenAI (an API key is set)")
        raise ConfigError(f"[judge]: the judge's endpoint is set ({where}) but no model:"
                          " set [judge] model, --model or OPENAI_MODEL (or enabled = false to "
                          "score from the human labels alone)")
    if not (base_url or endpoints or api_key or env.get("base_url") or env.get("api_key")):
        raise ConfigError(f"[judge]: the judge's model is set ({model}) but no endpoint:"
                          " set OPENAI_API_KEY for OpenAI, or [judge] base_url, --base-url or "
                          "OPENAI_BASE_URL for another server")
    settings = j.model_dump(exclude={"enabled", "model", "base_url", "endpoints"})
    settings["endpoints"] = [e.model_dump(exclude_none=True) for e in endpoints]
    return JudgeConfig.from_env(model=model, base_url=base_url, api_key=api_key,
                                cache_dir=config.path(config.output.cache_dir), **settings)
