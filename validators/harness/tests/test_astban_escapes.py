"""The static ban reasons about what a candidate's names reach, not about a
list of spellings: issue 32's bypass (numpy.ctypeslib's ctypes) and its
variants — banned modules reached through allowed ones, module objects passed
around, file I/O through numpy or jax, frame introspection — are refused,
while every draft the project generates or proves still passes."""

import glob
import os

import pytest

from pallasify_harness import astban

HEAD = "import numpy as np\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n"


@pytest.mark.parametrize("body", [
    # issue 32, verbatim, and the same reach spelled otherwise
    "import numpy.ctypeslib as nc\nnc.ctypes.CDLL(None).system(b'id')\n",
    "x = np.ctypeslib.ctypes.CDLL(None)\n",
    "from numpy import ctypeslib\n",
    "from numpy.ctypeslib import ctypes as c\n",
    "import numpy.ctypeslib\n",
    "import numpy.f2py\n", "import numpy.distutils\n", "import numpy.testing\n", "from numpy.lib import npyio\n",
    "x = np.lib.npyio.load('a.npy')\n", "x = np.core.multiarray.fromfile('/etc/passwd')\n",
    "x = np.testing.assert_equal\n", "x = np.f2py\n", "x = np.char\n",
    "import typing\nx = typing.sys.modules\n", "import dataclasses\nx = dataclasses.sys\n",
    # module objects used as values, then reached through
    "m = np\nm.ctypeslib\n", "m = [np][0]\n", "def f(m):\n    return m\nf(np).ctypeslib\n", "x = type(np)\n",
    "x = getattr(jnp.ones(1), 'ctypeslib')\n", "x = getattr(jnp.ones(1), '__class__')\n",
    # file I/O
    "x = np.fromfile('/etc/passwd', dtype=np.uint8)\n", "x = np.load('a.npy')\n", "np.save('a.npy', 1)\n",
    "np.savez('a', x=1)\n", "np.savez_compressed('a', x=1)\n", "np.savetxt('a', [1])\n", "x = np.loadtxt('/etc/passwd')\n",
    "x = np.genfromtxt('/etc/passwd')\n", "x = np.memmap('a', mode='w+', shape=(4,))\n", "x = np.DataSource()\n",
    "x = np.fromregex('/etc/passwd', 'x', np.uint8)\n", "np.zeros(3).tofile('a')\n", "np.zeros(3).dump('a')\n",
    "from numpy import fromfile as ff\n", "from numpy import load\n", "x = jnp.load('a.npy')\n",
    "from jax.numpy import load\n", "x = np.lib.format.open_memmap('a')\n", "x = np.rec.fromfile('a')\n",
    "jax.profiler.start_trace('/tmp/t')\n", "x = jax.lib.xla_client\n",
    # frames: a running generator's caller's globals are the harness's
    "g = (x for x in [1])\nx = g.gi_frame.f_back.f_globals\n",
])
def test_escapes_banned(body):
    bans = astban.check_source(HEAD + body + "\ndef run(args, *, interpret):\n    return pl.pallas_call\n")
    assert bans, body
    assert all(b.kind == "security" for b in bans), bans


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def drafts():
    pats = ["transforms/pallas/testdata/*/draft.golden.py", "fixtures/kernels/*/candidate.py",
            "validators/harness/tests/data/*/good.py"]
    return sorted(f for p in pats for f in glob.glob(os.path.join(REPO, p)))


def test_project_drafts_pass():
    files = drafts()
    assert len(files) > 20, files
    for f in files:
        with open(f, encoding="utf-8") as fh:
            src = fh.read()
        sec = [str(b) for b in astban.check_source(src, "", "") if b.kind == "security"]
        assert not sec, (os.path.relpath(f, REPO), sec)
