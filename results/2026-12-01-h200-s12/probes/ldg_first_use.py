"""For each global load (LDG) in a kernel instance's SASS: the distance to the first instruction that reads its
register (bench/NOTES.md §37). Run from the repo root: python ldg_first_use.py CSRC_DIR 2,128,128,0,1,0 ..."""
import subprocess, tempfile, re, sys, os
sys.path.insert(0, os.getcwd())
from pathlib import Path
from bench.sass import find_cuobjdump
src = sys.argv[1]
for inst in sys.argv[2:]:
    with tempfile.TemporaryDirectory() as t:
        cu=Path(t)/'i.cu'; obj=Path(t)/'i.o'
        cu.write_text('#include "folded_decode_sm90.cuh"\nnamespace foscar { template cudaError_t launch<%s>(const Params&, int, cudaStream_t); }\n' % inst)
        r = subprocess.run(["nvcc","-O3","-std=c++17","-gencode=arch=compute_90a,code=sm_90a","-lineinfo","-Xptxas","-v",f"-I{src}","-c",str(cu),"-o",str(obj)],capture_output=True,text=True)
        if r.returncode: print(r.stderr[-2000:]); continue
        regs = re.findall(r"Used (\d+) registers", r.stderr); spill = re.findall(r"(\d+) bytes spill stores", r.stderr)
        sass=subprocess.run([find_cuobjdump(),"-sass",str(obj)],capture_output=True,text=True).stdout
    L=[]
    for line in sass.split("\n"):
        mm = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if mm: L.append((mm.group(1), mm.group(2).strip()))
    idx=[i for i,(a,t) in enumerate(L) if re.search(r"LDG\.E(\.CONSTANT)?\s", t) and 'U16' not in t]
    out=[]
    for j in idx:
        reg=re.search(r"LDG\.E(?:\.CONSTANT)? (R\d+)",L[j][1]).group(1)
        for k in range(j+1,min(j+1500,len(L))):
            if re.search(rf"\b{reg}\b", L[k][1]):
                out.append((L[j][0], k-j, L[k][1][:40])); break
    print(inst, 'regs', regs, 'spill', spill, out)
