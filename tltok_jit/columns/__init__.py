"""Columns in, columns out: Arrow, pandas."""
