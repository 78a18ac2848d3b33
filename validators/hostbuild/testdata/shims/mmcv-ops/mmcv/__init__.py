# Stand-in for mmcv/__init__.py (absent from the corpus subset): lets the
# repository's own mmcv/ portions be found.
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
