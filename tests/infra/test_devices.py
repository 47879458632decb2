"""Device names checked once (`parse_device`: whether the name is one; `resolve_device`: whether this machine
has it, naming the flag that chose it), and `to_device` copies: each refusal one line naming the valid
names or the flag to use instead; machines without CUDA or MPS made so whatever this machine is."""

import pytest
import torch

from aps_teach.infra.devices import parse_device, resolve_device, to_device


@pytest.mark.parametrize(("name", "device"), [
    ("cpu", torch.device("cpu")), ("cuda", torch.device("cuda")), ("cuda:3", torch.device("cuda", 3)),
    ("mps", torch.device("mps"))])
def test_a_device_name_is_parsed_whether_or_not_this_machine_has_it(name, device):
    assert parse_device(name) == device


@pytest.mark.parametrize(("name", "message"), [
    ("tpu", "unknown device 'tpu'"), ("cuda:x", "unknown device 'cuda:x'"),
    ("meta", "unsupported device 'meta'; valid: cpu, cuda, cuda:N, mps")])
def test_a_name_that_is_no_device_of_ours_is_refused_naming_the_valid_ones(name, message):
    with pytest.raises(ValueError, match="valid: cpu, cuda, cuda:N, mps") as refusal:
        parse_device(name)
    assert str(refusal.value).startswith(message) and "\n" not in str(refusal.value)


def test_a_device_this_machine_lacks_names_the_flag_that_chose_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("cpu", "--anything") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"^device 'cuda:1' asked for but CUDA is not available .*; use "
                                         r"--atari.device cpu$"):
        resolve_device("cuda:1", "--atari.device")
    with pytest.raises(ValueError, match=r"; use --device cpu$"):
        resolve_device("mps")  # the default flag


def test_a_gpu_index_past_the_visible_ones_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError, match=r"^device 'cuda:2': only 2 CUDA device\(s\) visible$"):
        resolve_device("cuda:2")


def test_a_copy_goes_where_it_is_sent_and_a_tensor_already_there_is_itself():
    x = torch.arange(6.0).reshape(2, 3)
    assert to_device(x, torch.device("cpu")) is x  # .to on its own device copies nothing
    moved = to_device(x, torch.device("meta"))  # not CUDA: a plain .to, no pinned staging
    assert moved.device.type == "meta" and moved.shape == x.shape and moved.dtype == x.dtype
