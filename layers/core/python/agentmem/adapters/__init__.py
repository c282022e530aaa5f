"""Adapters: the embedded backend (SQLite, files) and the AWS backend."""
