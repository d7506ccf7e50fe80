"""python run.py NAME FLAG...: build .ab/exc/guard.cpp with the flags, call it with a failing check; prints raised/ok."""
import sys, torch
from torch.utils.cpp_extension import load
name, flags = sys.argv[1], sys.argv[2:]
m = load(name=name, sources=[__file__.replace("run.py", "guard.cpp")], extra_cflags=flags, verbose=False)
try:
    m.f(torch.zeros(1, device="cuda"), None, 1)
    print(name, "no error")
except RuntimeError as e:
    print(name, "raised:", str(e).splitlines()[0])
