"""Credit assignment for reinforcement learning as one Triton primitive: a reverse scan over
affine maps, fused with each algorithm's prologue and epilogue."""
from .returns import GAEOutput, discounted_returns, gae, td_lambda
from .scan import linear_scan

__all__ = ["linear_scan", "discounted_returns", "gae", "td_lambda", "GAEOutput"]
__version__ = "0.1.0"
