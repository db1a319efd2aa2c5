"""Credit assignment for reinforcement learning as one Triton primitive: a reverse scan over
affine maps, fused with each algorithm's prologue and epilogue."""
from ._dispatch import credit_assignment
from .crr import CRROutput, crr_loss
from .ppo import PPOOutput, ppo_clip_loss
from .returns import GAEOutput, discounted_returns, gae, td_lambda
from .sac import sac_actor_loss, sac_targets, sac_temperature_loss
from .primitive import linear_scan
from .vtrace import VTraceOutput, vtrace

__all__ = [
    "linear_scan",
    "discounted_returns", "gae", "td_lambda", "vtrace", "ppo_clip_loss", "sac_targets", "crr_loss",
    "sac_actor_loss", "sac_temperature_loss", "credit_assignment",
    "GAEOutput", "VTraceOutput", "PPOOutput", "CRROutput",
]
__version__ = "0.1.0"
