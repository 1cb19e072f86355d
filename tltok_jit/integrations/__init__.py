"""The `tltok` command line, its encode job (local and on Ray), and the training shard writers."""
