import sys, os, re
# production lines: non-blank, non-comment lines of src/**/*.rs, skipping #[cfg(test)] items and files named tests.rs
def count(path):
    n=0; skip_depth=None; depth=0; pending_cfg=False
    for line in open(path):
        s=line.strip()
        if skip_depth is not None:
            depth += s.count('{')-s.count('}')
            if depth<=skip_depth: skip_depth=None
            continue
        if s.startswith('#[cfg(test)]'):
            pending_cfg=True; continue
        if pending_cfg:
            if s.endswith(';'):
                pending_cfg=False; continue
            if '{' in s:
                skip_depth=depth; depth += s.count('{')-s.count('}'); pending_cfg=False
                if depth<=skip_depth: skip_depth=None
                continue
            continue
        depth += s.count('{')-s.count('}')
        if not s or s.startswith('//'): continue
        n+=1
    return n
tot=0
for crate in sys.argv[1:]:
    c=0
    for root,_,files in os.walk(os.path.join(crate,'src')):
        for f in files:
            if f.endswith('.rs') and f!='tests.rs' and 'tests' not in root.split(os.sep):
                c+=count(os.path.join(root,f))
    print(crate,c); tot+=c
print('total',tot)
