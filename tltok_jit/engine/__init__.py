"""The kernel side behind `Encoding`: `core.Engine` (tables, compiled entry points, workspaces and call
handles, the short-call path), argument checks, the per-call special-token policy, text to UTF-8,
threads, result pages, id lists, pickling recipes."""
