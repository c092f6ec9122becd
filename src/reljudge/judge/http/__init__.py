"""Talking to an OpenAI-compatible endpoint: the HTTP transport, the client, the retry
policy, rate limits, the capabilities an endpoint lacks, and the endpoints of a job."""
