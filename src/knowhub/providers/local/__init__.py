"""Models the user brings: ONNX graphs in a local folder, with their tokenizer."""
