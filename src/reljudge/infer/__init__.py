"""Judge labels plus a small human sample -> better labels (calibration, panels) or honest
estimates (prediction-powered inference)."""
