"""Experiments: measure the kernels on the GPU, calibrate and compare with the model."""
