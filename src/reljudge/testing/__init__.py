"""Test helpers that users may reuse: a scriptable OpenAI-compatible server on 127.0.0.1."""

from reljudge.testing.fake_openai import FakeOpenAI, Reply, chat_reply  # noqa: I001

__all__ = ["FakeOpenAI", "Reply", "chat_reply"]

from reljudge.testing.synthetic import synthetic_runs  # noqa: E402

__all__ += ["synthetic_runs"]

from reljudge.testing.graders import hash_grader  # noqa: E402

__all__ += ["hash_grader"]
