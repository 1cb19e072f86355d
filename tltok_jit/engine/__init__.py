"""The kernel side behind `Encoding`: argument checks, the per-call special-token policy, text to
UTF-8, threads, result pages, id lists, pickling recipes."""
