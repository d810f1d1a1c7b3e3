"""Finished studies: each module asked one question of the H200 (or of the model), ran on the
device (`bash experiments/research/device.sh <study>`), and left its records under
experiments/results/<gpu>/logs/ and its tables under experiments/results/<gpu>/. What each
found, and the prediction written before it ran, is in docs/research/. Nothing outside this
package imports it; its checks are experiments/research/tests/.
"""
