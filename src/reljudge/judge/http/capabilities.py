"""What an endpoint accepts, and the ladder we step down when it rejects a request feature.

When an error names a feature the request used (any status), the job steps that feature down
once, warns once and sends again (docs/labelling.md, "Endpoints differ", says which servers
need it):

- response_format: json_schema -> json_object -> none (the prompt alone asks for JSON)
- logprobs (and top_logprobs): on -> off
- seed: sent -> not sent
- token limit field: max_tokens <-> max_completion_tokens (one switch per job)

The parameters actually sent are part of the cache key and of each label's provenance.
"""

from __future__ import annotations

from typing import Any

JSON_OBJECT = {"type": "json_object"}
LADDER = {
    "response_format": ("json_schema", "json_object", "none"),
    "logprobs": ("on", "off"),
    "seed": ("sent", "not sent"),
    "token_limit": ("max_tokens", "max_completion_tokens"),
}


class Capabilities:
    """The request features in use for one job, stepped down as the endpoint rejects them."""

    def __init__(self, base: dict[str, Any], *, json_schema: dict | None, logprobs: bool,
                 token_field: str = "max_tokens"):
        #: temperature, the token limit value, seed when given
        self.base = base
        self.json_schema = json_schema
        self.state = {"response_format": "json_schema" if json_schema else "none",
                      "logprobs": "on" if logprobs else "off",
                      "seed": "sent" if "seed" in base else "not sent",
                      "token_limit": token_field}
        #: features already stepped down in this job
        self.switched: set[str] = set()
        self.params = self._build()

    def _build(self) -> dict[str, Any]:
        p = {k: v for k, v in self.base.items() if k not in ("seed", "max_tokens")}
        p[self.state["token_limit"]] = self.base["max_tokens"]
        if self.state["seed"] == "sent":
            p["seed"] = self.base["seed"]
        if self.state["response_format"] == "json_schema":
            p["response_format"] = self.json_schema
        elif self.state["response_format"] == "json_object":
            p["response_format"] = JSON_OBJECT
        if self.state["logprobs"] == "on":
            p["logprobs"] = True
            p["top_logprobs"] = 5
        return p

    def fall_back(self, feature: str, sent: dict[str, Any]) -> str | None:
        """Step ``feature`` down after a request with params ``sent`` was rejected.

        Returns a warning to show (once), "" when another call already stepped it (send
        again, nothing to say), or None when there is no step left (the failure stands).
        """
        if sent is not self.params and sent != self.params:
            # the request was built before an earlier fall-back: just resend
            return ""
        ladder = LADDER[feature]
        now = self.state[feature]
        i = ladder.index(now)
        if feature == "token_limit":
            if feature in self.switched:
                return None
            new = ladder[1 - i]
        elif i + 1 < len(ladder):
            new = ladder[i + 1]
        else:
            return None
        self.state[feature] = new
        self.switched.add(feature)
        self.params = self._build()
        return (f"the endpoint rejected {feature} = {now}; using {new} for the rest of this "
                "run")
