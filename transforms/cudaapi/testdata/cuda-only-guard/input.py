import torch


def sm_version():
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        print("sm", props.major)


def half(model):
    if torch.cuda.is_available():
        model = model.half()
    return model
