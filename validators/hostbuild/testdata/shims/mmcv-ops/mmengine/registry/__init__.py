# Stand-in for mmengine.registry.MODELS: register_module is a no-op decorator.
class _Registry:
    def register_module(self, name=None, force=False, module=None):
        if module is not None:
            return module
        return lambda cls: cls


MODELS = _Registry()
