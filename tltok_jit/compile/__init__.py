"""Building and loading compiled kernels: the build-time compile, the background compile, and the
exact pure-Python encoders that serve calls until kernels are ready."""
