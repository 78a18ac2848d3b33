def check(device_type, device, name):
    assert device_type in {'cuda'}
    if device.type in ("cuda", "cpu"):
        pass
    if device_type not in ["cuda"]:
        raise ValueError(device_type)
    ok = device_type in {"cuda", "tpu"}
    other = name in {"cuda"}
    single = device.type in ('cuda',)
    kept = device_type in [
        "cuda",
    ]
    return ok, other, single, kept
