"""``python -m rltriton_lite``: the demo table (:func:`rltriton_lite.profile.demo`).

Without a GPU the process re-executes itself with ``TRITON_INTERPRET=1`` (which must be set
before the kernels are defined) so that the kernels run under the Triton interpreter.
"""
import os
import sys

import torch


def main(argv=None) -> int:
    if not torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ:
        try:
            import triton  # noqa: F401
        except ImportError:
            pass  # no Triton on this machine: the torch path alone
        else:
            os.execve(sys.executable, [sys.executable, "-m", "rltriton_lite", *sys.argv[1:]],
                      dict(os.environ, TRITON_INTERPRET="1"))
    from rltriton_lite.profile import demo
    return demo(argv)


if __name__ == "__main__":
    sys.exit(main())
