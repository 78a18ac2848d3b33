def check(device_type, device, name):
    assert device_type in {'cuda', 'tpu'}
    if device.type in ("cuda", "tpu", "cpu"):
        pass
    if device_type not in ["cuda", "tpu"]:
        raise ValueError(device_type)
    ok = device_type in {"cuda", "tpu"}
    other = name in {"cuda"}
    single = device.type in ('cuda', 'tpu')
    kept = device_type in [
        "cuda",
        "tpu",
    ]
    return ok, other, single, kept
