"""PyTorch/XLA: a small torch.nn model, one forward and backward pass and an SGD step on the XLA device (CPU)."""

import torch
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8).to(device), torch.randn(32, 1).to(device)
loss = torch.nn.functional.mse_loss(model(x), y)
loss.backward()
optimizer.step()
torch_xla.sync()
print("loss", loss.item())
