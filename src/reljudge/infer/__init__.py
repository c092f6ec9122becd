"""Judge labels plus a human sample -> honest estimates (prediction-powered inference)."""
