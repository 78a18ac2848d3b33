from setuptools import setup

setup(
    name="demo",  # not "xformers"
    install_requires=["torch>=2.11", "bitsandbytes"],  # "flash-attn" in a comment
    extras_require={"fast": ["flash-attn>=2"], "xformers": ["numpy"]},
)
