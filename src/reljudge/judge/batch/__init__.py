"""The Batch API job: request files (``files``), submitting and resuming (``job``),
collecting the answers (``collect``) and collecting recorded jobs later (``recorded``)."""
