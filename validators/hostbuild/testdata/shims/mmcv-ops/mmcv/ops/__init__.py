# Stand-in for mmcv/ops/__init__.py (absent from the corpus subset): the
# public names the upstream tests import, from the repository's own modules.
# A module whose extension functions are missing is skipped (its names stay
# undefined), as it would fail to import upstream too.
import importlib
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)

_EXPORTS = {
    "bbox": ["bbox_overlaps"],
    "carafe": ["CARAFE", "CARAFENaive", "CARAFEPack", "carafe", "carafe_naive"],
    "focal_loss": ["SigmoidFocalLoss", "SoftmaxFocalLoss", "sigmoid_focal_loss", "softmax_focal_loss"],
    "gather_points": ["gather_points"],
    "masked_conv": ["MaskedConv2d", "masked_conv2d"],
    "nms": ["batched_nms", "nms", "nms_match", "nms_rotated", "soft_nms", "nms_quadri"],
    "psa_mask": ["PSAMask"],
    "roi_align": ["RoIAlign", "roi_align"],
    "three_interpolate": ["three_interpolate"],
    "tin_shift": ["TINShift", "tin_shift"],
}
for _mod, _names in _EXPORTS.items():
    try:
        _m = importlib.import_module("." + _mod, __name__)
    except (ImportError, AssertionError) as _e:  # noqa: PERF203
        print("mmcv.ops shim: %s not importable: %s" % (_mod, _e))
        continue
    for _n in _names:
        if hasattr(_m, _n):
            globals()[_n] = getattr(_m, _n)
