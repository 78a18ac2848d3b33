# Stand-in for mmcv.utils (the corpus has only mmcv/utils/ext_loader.py).
import pkgutil

import torch

__path__ = pkgutil.extend_path(__path__, __name__)

IS_CUDA_AVAILABLE = torch.cuda.is_available()
IS_MLU_AVAILABLE = False
IS_MUSA_AVAILABLE = False
IS_NPU_AVAILABLE = False
IS_MPS_AVAILABLE = False
