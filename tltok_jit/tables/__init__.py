"""Model description -> validated flat arrays the kernels index, and their on-disk cache."""
