"""The bundled classifier's network: a small ResNet-style CNN for 3×32×32 images, 10 classes.

Its own module (not build_classifier.py) so that TorchScript names its class by this import
path whether the build runs as `python -m servers.models.build_classifier` or from a test: a
class defined in `__main__` would be saved under another name, and the bytes would differ.

stem conv 3→16 (3×3) + BN + ReLU, three residual blocks (16→16, 16→32 /2, 32→64 /2; a 1×1
conv + BN shortcut where the shape changes), global average pool, linear 64→10.
"""

from __future__ import annotations

import torch
from torch import nn

IMAGE_SHAPE = (3, 32, 32)
CLASSES = 10
WIDTHS = (16, 32, 64)  # the channels of the three blocks


class Block(nn.Module):
    """A basic residual block: conv-BN-ReLU-conv-BN, plus the shortcut, then ReLU."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        stem = nn.Conv2d(IMAGE_SHAPE[0], WIDTHS[0], 3, 1, 1, bias=False)
        self.stem = nn.Sequential(stem, nn.BatchNorm2d(WIDTHS[0]))
        self.blocks = nn.Sequential(
            Block(WIDTHS[0], WIDTHS[0], 1), Block(WIDTHS[0], WIDTHS[1], 2), Block(WIDTHS[1], WIDTHS[2], 2)
        )
        self.head = nn.Linear(WIDTHS[2], CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.blocks(torch.relu(self.stem(x)))
        logits: torch.Tensor = self.head(out.mean(dim=(2, 3)))  # global average pool: [batch, 64]
        return logits


def seeded_classifier(seed: int) -> Classifier:
    """The network in eval mode with weights from one generator, tensor by tensor in sorted
    name order (independent of torch's own init code): convs ~ N(0, 2/fan_in) (He, so the
    activations neither vanish nor explode through the blocks), the linear ~ N(0, 1/64), its bias
    0; every BN's scale and running variance ~ U(0.8, 1.2), its shift and running mean ~ N(0, 0.05)
    (not the identity BN a fresh module has, so the export's BN handling is exercised)."""
    model = Classifier().eval()
    generator = torch.Generator().manual_seed(seed)
    state = model.state_dict()
    with torch.no_grad():
        for name in sorted(state):
            tensor = state[name]
            if name.endswith("num_batches_tracked"):
                continue
            is_bn = tensor.dim() == 1 and not name.startswith("head.")
            if is_bn and name.endswith(("weight", "running_var")):
                tensor.copy_(torch.empty(tensor.shape).uniform_(0.8, 1.2, generator=generator))
            elif is_bn:  # bias, running_mean
                tensor.copy_(torch.empty(tensor.shape).normal_(0.0, 0.05, generator=generator))
            elif name == "head.bias":
                tensor.zero_()
            else:
                gain = 1.0 if name == "head.weight" else 2.0
                std = (gain / tensor[0].numel()) ** 0.5  # fan_in: one output's weights
                tensor.copy_(torch.empty(tensor.shape).normal_(0.0, std, generator=generator))
    return model
