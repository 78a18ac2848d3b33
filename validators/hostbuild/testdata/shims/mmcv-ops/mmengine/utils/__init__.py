# Stand-in for mmengine.utils: deprecated_api_warning renames old keyword
# arguments, as the real decorator does, and changes nothing else.
import functools


def deprecated_api_warning(name_dict, cls_name=None):
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            for old, new in name_dict.items():
                if old in kwargs:
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call

    return wrap


def digit_version(v):
    parts = []
    for p in str(v).split("+")[0].split("."):
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)
