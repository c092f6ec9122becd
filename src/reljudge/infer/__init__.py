"""Judge labels plus a small human sample -> better labels or honest estimates."""
