"""Numba kernels. Every array they index was validated when the tables were compiled."""
