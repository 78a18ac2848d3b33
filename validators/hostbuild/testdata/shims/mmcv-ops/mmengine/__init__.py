# Stand-in for mmengine (not installed): only the names mmcv's op wrappers use.
import pickle


def load(path):
    """mmengine.load for the .pkl test data the upstream tests read."""
    with open(path, "rb") as f:
        return pickle.load(f)
