"""Checks from inside the script that discovery leaves its objects as they were: no attributes,
hooks or flags added to the model, inputs unmodified, autograd still working."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
model.train()
before = {k: sorted(vars(m)) for k, m in model.named_modules()}
x = torch.rand(2, 4, requires_grad=True)
x_copy = x.detach().clone()
grad_enabled = torch.is_grad_enabled()

out = model(x)
out.sum().backward()

problems = []
if {k: sorted(vars(m)) for k, m in model.named_modules()} != before:
    problems.append("module attributes changed")
if any(m._forward_hooks or m._forward_pre_hooks for m in model.modules()):
    problems.append("hooks left on the model")
if not all(m.training for m in model.modules()):
    problems.append("training flag changed")
if not torch.equal(x.detach(), x_copy) or not x.requires_grad:
    problems.append("input changed")
if x.grad is None or model[0].weight.grad is None:
    problems.append("autograd broken")
if torch.is_grad_enabled() != grad_enabled:
    problems.append("grad mode changed")
if "forward" in vars(model) or "__call__" in vars(model):
    problems.append("instance attribute patched")
print("integrity:", "OK" if not problems else "; ".join(problems))
