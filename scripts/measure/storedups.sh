#!/bin/bash
# usage: storedups.sh <worktree> ; counts duplicate pairs and shared lines between the two adapter crates
set -e
wt=$1; d=$(mktemp -d /tmp/dupcount.XXXX)
for c in capsid-store-sqlite capsid-store-postgres capsid-store-sql; do mkdir -p $d/$c; cp -r $wt/$c/src $d/$c/; done
out=$(cd $d && duplicates --repo $d --most 200 --seconds 120)
echo "$out" | head -1
echo "$out" | python3 -c '
import sys,re
pairs=0; lines=0; cross=0; crosslines=0
for l in sys.stdin:
    m=re.match(r"\s*D\d+\s+(\S+):(\d+)-(\d+)\s+~\s+(\S+):(\d+)-(\d+)",l)
    if not m: continue
    a,a1,a2,b,b1,b2=m.groups(); n=int(a2)-int(a1)+1
    pairs+=1; lines+=n
    ca=a.split("/")[0]; cb=b.split("/")[0]
    if {ca,cb}=={"capsid-store-sqlite","capsid-store-postgres"}: cross+=1; crosslines+=n
print(f"pairs {pairs} (lines {lines}); sqlite~postgres pairs {cross} (lines {crosslines})")
'
rm -rf $d
