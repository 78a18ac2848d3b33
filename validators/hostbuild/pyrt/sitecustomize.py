# pallasify hostbuild: installs the cuda-as-cpu runtime at interpreter start
# when PALLASIFY_HOSTBUILD_CONFIG is set (see pallasify_hostrt/__init__.py).
import os

if os.environ.get("PALLASIFY_HOSTBUILD_CONFIG"):
    import pallasify_hostrt

    pallasify_hostrt.install()
