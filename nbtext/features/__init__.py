"""Features: the vocabulary (tokens and ids), sparse count rows, counting documents, and
choosing which tokens a model keeps."""
