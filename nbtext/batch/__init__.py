"""Batch work over many documents: chunks mapped on one core or several (chunks), reduced into
a model (train), or scored (score)."""
