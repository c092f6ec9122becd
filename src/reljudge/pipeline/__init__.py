"""The end-to-end flow: pool -> label -> merge -> eval -> audit, from one config file."""

from reljudge.pipeline.config import PipelineConfig, load_config

__all__ = ["PipelineConfig", "load_config"]
