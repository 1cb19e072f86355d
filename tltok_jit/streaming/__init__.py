"""Streaming: ids out as text comes in (`encode`), text out as ids come in (`decode`)."""
