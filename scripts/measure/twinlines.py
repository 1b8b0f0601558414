import sys,os,re
# share of one adapter's code lines (non-blank, non-comment, len>=12 normalised) found in the other, after normalising placeholders & driver names
def lines(crate):
    out=[]
    for root,_,files in os.walk(os.path.join(crate,'src')):
        for f in files:
            if not f.endswith('.rs'): continue
            for l in open(os.path.join(root,f)):
                s=l.strip()
                if not s or s.startswith('//'): continue
                s=re.sub(r'\?(\d+)',r'$\1',s); s=re.sub(r'\bSqlite\w*|\bPg\w*|\bPostgres\w*','DB',s)
                s=re.sub(r'\bsqlite\b|\bpostgres\b','db',s)
                if len(s)<12: continue
                out.append(s)
    return out
a=lines(sys.argv[1]); b=set(lines(sys.argv[2]))
same=sum(1 for s in a if s in b)
print(f"{sys.argv[1]}: {len(a)} lines, {same} also in {sys.argv[2]} ({100*same/max(1,len(a)):.0f}%)")
